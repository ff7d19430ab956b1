# A 10 000-deep recursion that spins at the bottom.
def spin
  i = 0
  i += 1 while true
end

def rec(n)
  spin if n == 1
  rec(n - 1)
end

puts "ready"
$stdout.flush
rec(10_000)
