# One of two processes on one pid (test_pidreuse.c): run as nobody, the
# target a user gives pyrospy; as root, the root job that gets its pid
# once it is gone, and must never be sampled.
def spin
  x = 0
  2000.times { |i| x += i }
  x
end

def nobody_loop
  loop { spin }
end

def root_only_secret_handler_for_payroll
  loop { spin }
end

puts "ready"
$stdout.flush
Process.uid != 0 ? nobody_loop : root_only_secret_handler_for_payroll
