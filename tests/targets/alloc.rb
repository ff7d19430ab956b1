# The garbage collector runs much of the time: a live heap of 200 000
# strings, collected over and over.
KEEP = Array.new(200_000) { |i| "kept #{i}" }

def churn
  Array.new(1000) { |i| "item #{i}" }
  GC.start
end

puts "ready"
$stdout.flush
loop { churn }
