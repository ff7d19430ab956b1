# Exits on its own after 1.5 s of main_work while four threads still run
# (waking every millisecond), and spins 0.5 s more in at_exit_work, an
# at_exit handler, as the VM shuts down around it.
def tick
  loop { sleep 0.001 }
end

def monotonic
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def main_work
  t = monotonic
  nil while monotonic - t < 1.5
end

def at_exit_work
  t = monotonic
  nil while monotonic - t < 0.5
end

at_exit { at_exit_work }
4.times { Thread.new { tick } }
$junk = Array.new(200_000) { |i| { "k#{i}" => [i] * 10 } }
puts "ready"
$stdout.flush
main_work
