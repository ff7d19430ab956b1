# Busy in before_exec for 1.5 s, then exec()s: ARGV[0] "sleep" runs
# /bin/sleep (no interpreter), "self" this interpreter on seed.rb.
require "rbconfig"

def before_exec
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  nil while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t < 1.5
end

puts "ready"
$stdout.flush
before_exec
exec("/bin/sleep", "30") if ARGV[0] == "sleep"
exec(RbConfig.ruby, File.join(__dir__, "seed.rb"))
