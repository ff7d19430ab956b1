# Diff: foo and bar loop in turn, foo 3 units and bar 1 (DIFFWORK=base),
# or foo 1 and bar 3 (DIFFWORK=new), or both phases in turn, each tagged
# phase=base or phase=new (DIFFWORK=tags), or base for 2 s after "ready"
# and new from then on (DIFFWORK=switch).  A unit is 20 ms of a busy loop,
# timed (a JIT that compiles the loop must not shorten it): a round spans
# several of the test's 500 Hz ticks, and foo's share goes 75 % -> 25 %.
UNIT = 1

def foo(units)
  stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + units * 0.02
  i = 0
  while true
    i += 1
    break if i % 10_000 == 0 && Process.clock_gettime(Process::CLOCK_MONOTONIC) >= stop
  end
end

def bar(units)
  stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + units * 0.02
  i = 0
  while true
    i += 1
    break if i % 10_000 == 0 && Process.clock_gettime(Process::CLOCK_MONOTONIC) >= stop
  end
end

mode = ENV.fetch("DIFFWORK", "base")
require "pyrospy" if mode == "tags"
puts "ready"
$stdout.flush
switch_at = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 2.0
loop do
  phase = mode
  if mode == "switch"
    phase = Process.clock_gettime(Process::CLOCK_MONOTONIC) < switch_at ? "base" : "new"
  end
  case phase
  when "base"
    foo(3 * UNIT)
    bar(UNIT)
  when "new"
    foo(UNIT)
    bar(3 * UNIT)
  else
    Pyrospy.tag_wrapper({ "phase" => "base" }) do
      foo(3 * UNIT)
      bar(UNIT)
    end
    Pyrospy.tag_wrapper({ "phase" => "new" }) do
      foo(UNIT)
      bar(3 * UNIT)
    end
  end
end
