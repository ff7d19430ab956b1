# Recurse 20 deep and return, over and over: stacks change all the time.
# Lines matter to tests/test_exact.c: the call is on line 5, the loop on 10.
def recurse(x)
  return if x == 0
  recurse(x - 1)
end

puts "ready"
$stdout.flush
loop { recurse(20) }
