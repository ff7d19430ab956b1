# The main thread under one tag set for good, from before pyrospy attaches,
# while other threads come and go under tags of their own.
require "pyrospy"

def held
  i = 0
  loop { i += 1 }
end

def visitor(n)
  Pyrospy.tag_wrapper({ "visitor" => n.to_s }) { 200.times {} }
end

def churn
  n = 0
  loop do
    16.times.map { |k| Thread.new { visitor(n + k) } }.each(&:join)
    n = (n + 16) % 4096
    sleep 0.0005
  end
end

Thread.new { churn }
Pyrospy.tag_wrapper({ "where" => "main" }) do
  sleep 0.2
  puts "ready"
  $stdout.flush
  held
end
