# Diff: foo and bar loop in turn, foo 3 units and bar 1 (DIFFWORK=base),
# or foo 1 and bar 3 (DIFFWORK=new), or both phases in turn, each tagged
# phase=base or phase=new (DIFFWORK=tags), or base for 2 s after "ready"
# and new from then on (DIFFWORK=switch).  A unit is tens of milliseconds:
# a round spans several 100 Hz ticks, and foo's share goes 75 % -> 25 %.
UNIT = 600_000

def foo(n)
  i = 0
  while i < n
    i += 1
  end
end

def bar(n)
  i = 0
  while i < n
    i += 1
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
