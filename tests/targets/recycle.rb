# Run a new method every 0.2 s, each compiled from a string as f_N, and
# let the last one go (removed, collected) first: the next one's iseq may
# be put where the last one's was.  Like templates and eval-heavy code.
def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

puts "ready"
$stdout.flush
i = 0
loop do
  name = "f_#{i}"
  eval("def #{name}; t = now; nil while now - t < 0.2; end")
  send(name)
  Object.send(:remove_method, name)
  GC.start
  i += 1
end
