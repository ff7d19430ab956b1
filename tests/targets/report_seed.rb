# The seed workload (seed.rb: foo does three times the work of bar) in
# the main thread, and baz in a thread named "side": the html report's
# browser test (tests/test_report_html.c).
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

def baz
  loop { work(25_000) }
end

Thread.new { baz }.name = "side"
puts "ready"
$stdout.flush
loop do
  foo
  bar
end
