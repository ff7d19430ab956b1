# The tag helper is required 100 ms into a slow start, then every thread
# works under a tag for ever (under pyrospy exec, which attaches first).
sleep 0.1
require "pyrospy"

def spin(n)
  Pyrospy.tag_wrapper({ "worker" => n.to_s }) { loop {} }
end

2.times { |n| Thread.new { spin(n) } }
puts "ready"
$stdout.flush
spin(2)
