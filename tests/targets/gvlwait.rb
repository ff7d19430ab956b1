# Three threads that only compute, in methods of their own: one holds the
# GVL at a time, the others queue for it.  The main thread sleeps.
def gvl_spin_a
  loop { i = 0; i += 1 while i < 100_000 }
end

def gvl_spin_b
  loop { i = 0; i += 1 while i < 100_000 }
end

def gvl_spin_c
  loop { i = 0; i += 1 while i < 100_000 }
end

threads = [:gvl_spin_a, :gvl_spin_b, :gvl_spin_c].map { |m| Thread.new { send(m) } }
sleep 0.2
puts "ready"
$stdout.flush
threads.each(&:join)
