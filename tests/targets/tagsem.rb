# Tag semantics: nested wrappers, an exception escaping a wrapper, and a
# thread that ends (killed) inside a wrapper.
require "pyrospy"

def work(n)
  i = 0
  while i < n
    i += 1
  end
end

def nested_inner
  work(60_000)
end

def nested_outer
  work(60_000)
end

def boom
  work(60_000)
  raise ArgumentError, "escapes the wrapper"
end

def after_boom
  work(60_000)
end

def reused
  loop { work(60_000) }
end

t = Thread.new { Pyrospy.tag_wrapper({ "job" => "gone" }) { sleep } }
sleep 0.1
t.kill
t.join
Thread.new { reused }
puts "ready"
$stdout.flush
loop do
  Pyrospy.tag_wrapper({ "vehicle" => "car" }) do
    Pyrospy.tag_wrapper({ "vehicle" => "bike", "region" => "eu" }) { nested_inner }
    nested_outer
  end
  begin
    Pyrospy.tag_wrapper({ "route" => "/boom" }) { boom }
  rescue ArgumentError
    nil
  end
  after_boom
end
