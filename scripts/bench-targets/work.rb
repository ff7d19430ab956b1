# pyrospy bench target: a fixed CPU-bound workload, for the target slowdown.
#     ruby work.rb REPS [PAUSE]
# Prints "ready", sleeps PAUSE seconds (default 0.5: time for a profiler to
# attach), runs REPS rounds of recursive fib (stacks ~25 deep that change
# all the time) and prints the seconds the work took (monotonic clock).
def fib(n)
  n < 2 ? n : fib(n - 1) + fib(n - 2)
end

def work(reps)
  total = 0
  reps.times { total += fib(20) }
  total
end

reps = (ARGV[0] || 100).to_i
puts "ready"
$stdout.flush
sleep((ARGV[1] || 0.5).to_f)
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
work(reps)
printf("%.6f\n", Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0)
$stdout.flush
