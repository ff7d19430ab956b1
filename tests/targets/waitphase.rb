# Waiters that wake briefly and wait again at the same depth, in another
# method: N threads (ARGV[0], default 16) wait in park_0 while the phase
# is 0 and in park_1 while it is 1; the main thread flips the phase, waits
# until every waiter is parked in the new phase's method, then holds it
# under the process-wide tag phase=P (phase=moving around the flip).  A
# waiter's stack tagged phase=P always holds park_P.  On SIGTERM the wakes
# are written to ARGV[1] (a path) and the process exits.
require "pyrospy"

N = (ARGV[0] || 16).to_i
OUT = ARGV[1]
$lock = Mutex.new
$flip = ConditionVariable.new   # waiters wait on it for the phase
$done = ConditionVariable.new   # main waits on it for the waiters
$phase = 0
$parked = 0
$wakes = 0

def park_0
  $lock.synchronize do
    $parked += 1
    $done.signal if $parked == N
    $flip.wait($lock) while $phase == 0
    $wakes += 1
  end
end

def park_1
  $lock.synchronize do
    $parked += 1
    $done.signal if $parked == N
    $flip.wait($lock) while $phase == 1
    $wakes += 1
  end
end

def waiter
  loop do
    park_0
    park_1
  end
end

def hold_0(secs)
  stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs
  nil while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
end

def hold_1(secs)
  stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs
  nil while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
end

# a gap either side of the flip under phase=moving: a sample's stack and
# tags are read apart (Ruby reads the process tags once a tick, before its
# threads' stacks: a tick kept off the CPU for 12 ms beside other work
# paired phase=0 read before the flip with waiters read after it)
def settle(secs)
  sleep secs
end

trap("TERM") do
  if OUT
    File.write("#{OUT}.tmp", "#{$wakes}\n")
    File.rename("#{OUT}.tmp", OUT)
  end
  exit!(0)
end
N.times { Thread.new { waiter } }
$lock.synchronize { $done.wait($lock) while $parked < N }
Pyrospy.tags = { "phase" => "0" }
puts "ready"
$stdout.flush
k = 0
loop do
  $phase.zero? ? hold_0(0.004 + 0.001 * (k % 12)) : hold_1(0.004 + 0.001 * (k % 12))
  k += 1
  Pyrospy.tags = { "phase" => "moving" }
  settle(0.025)
  $lock.synchronize do
    $phase ^= 1
    $parked = 0
    $flip.broadcast
    $done.wait($lock) while $parked < N
  end
  settle(0.002)
  Pyrospy.tags = { "phase" => $phase.to_s }
end
