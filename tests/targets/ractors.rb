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

if defined?(Ractor::Port)
  # 4.0 replaced Ractor.yield and Ractor#take with ports
  port = Ractor::Port.new
  Ractor.new(port) { |p| p << :started; ractor_spin_one }
  Ractor.new(port) { |p| p << :started; ractor_spin_two }
  2.times { port.receive }
else
  one = Ractor.new { Ractor.yield :started; ractor_spin_one }
  two = Ractor.new { Ractor.yield :started; ractor_spin_two }
  one.take
  two.take
end
puts "ready"
$stdout.flush
sleep
