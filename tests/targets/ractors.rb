# Two ractors besides the main one, each spinning in a method of its own;
# the main thread sleeps.  Says "ready" once both have started.
Warning[:experimental] = false

def ractor_spin_one
  loop do
    i = 0
    i += 1 while i < 100_000
  end
end

def ractor_spin_two
  loop do
    i = 0
    i += 1 while i < 100_000
  end
end

one = Ractor.new { Ractor.yield :started; ractor_spin_one }
two = Ractor.new { Ractor.yield :started; ractor_spin_two }
one.take
two.take
puts "ready"
$stdout.flush
sleep
