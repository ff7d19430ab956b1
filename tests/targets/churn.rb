# Threads start and end all the time: 8 at once, each living ~1 ms in
# short_job; the main thread keeps starting them in churn.
def work(n)
  i = 0
  i += 1 while i < n
end

def short_job
  work(20_000)
end

def churn
  loop do
    Array.new(8) { Thread.new { short_job } }.each(&:join)
  end
end

puts "ready"
$stdout.flush
churn
