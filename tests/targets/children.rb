# Every ~1.2 s a child that is busy for 1.0 s in child_work and exits
# (1.0 s of wall time: on a loaded machine it waits its turn for a CPU,
# runnable, and is sampled all the same): a Process.fork, then a Ruby started by Process.spawn, twice.
# Exits when the last is done.
def child_work
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 < 1.0
    i = 0
    i += 1 while i < 1000
  end
end

if ARGV == ["child"]
  child_work
  exit! 0
end
puts "ready"
$stdout.flush
sleep 1.0 # for the profiler to attach
4.times do |i|
  if i.even?
    Process.wait(fork { child_work; exit! 0 })
  else
    Process.wait(Process.spawn(RbConfig.ruby, $0, "child"))
  end
  sleep 0.2
end
