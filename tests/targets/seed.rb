# The seed workload: foo does three times the work of bar.
def work(n)
  i = 0
  while i < n
    i += 1
  end
end

def foo
  work(75_000)
end

def bar
  work(25_000)
end

puts "ready"
$stdout.flush
loop do
  foo
  bar
end
