# The process forks: the child spins in in_child, the parent in in_parent.
# Ready once both run.
def spin
  i = 0
  loop { i += 1 }
end

def in_child
  spin
end

def in_parent
  spin
end

r, w = IO.pipe
fork do
  w.write("x")
  w.flush
  in_child
end
r.read(1)
puts "ready"
$stdout.flush
in_parent
