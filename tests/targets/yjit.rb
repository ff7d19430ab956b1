# Is YJIT on in this Ruby, and has it compiled code?  Prints
# "ready yjit N" (N iseqs compiled) or "ready interp".
def work(n)
  i = 0
  i += 1 while i < n
  i
end

3.times { work(1000) }
if defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?
  puts "ready yjit #{RubyVM::YJIT.runtime_stats[:compiled_iseq_count].to_i}"
else
  puts "ready interp"
end
$stdout.flush
sleep
