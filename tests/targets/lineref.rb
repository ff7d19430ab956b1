# The reference for pyrospy's Ruby lines: Ruby's own rb_profile_frames(),
# called in the program at each sample (wall time), through stackprof
# (Debian's ruby-stackprof) or, where Debian has none for this Ruby, through
# rbsampler.c, which samples as stackprof does.  Runs a workload for a
# while, then writes how often each method of the workload (and
# Integer#times, Ruby code from 3.3) was seen on each of its lines, and
# exits.
#
#   ruby lineref.rb WORKLOAD OUT SECONDS INTERVAL_US [RBSAMPLER.so]
#
# OUT gets "method<TAB>line<TAB>total<TAB>self" lines: rb_profile_frames()
# gives a block its method's entry, so blocks are counted under their
# method; total counts every frame, self the innermost one.  OUT is written
# under another name and renamed, so that a reader never sees half of it.
workload, out, seconds, interval, sampler = ARGV
path = File.expand_path(workload)

if sampler
  require sampler
  start = -> { RbSampler.start(Integer(interval)) }
  stop = -> { RbSampler.stop }
else
  require "stackprof"
  start = -> { StackProf.start(mode: :wall, interval: Integer(interval), aggregate: true) }
  stop = lambda do
    StackProf.stop
    res = StackProf.results
    rows = []
    res[:frames].each_value do |fr|
      (fr[:lines] || {}).each do |line, (total, own)|
        rows << [fr[:name], fr[:file], line, total, own]
      end
    end
    [res[:samples], rows]
  end
end

Thread.new do
  sleep Float(seconds)
  samples, rows = stop.call
  File.open("#{out}.part", "w") do |f|
    rows.each do |label, file, line, total, own|
      name = label.to_s.sub(/\Ablock (\(\d+ levels\) )?in /, "")
      next unless file == path ||
                  (name == "Integer#times" && file.to_s.start_with?("<internal:"))
      f.puts "#{name}\t#{line}\t#{total}\t#{own}"
    end
    f.puts "samples\t0\t#{samples}\t0"
  end
  File.rename("#{out}.part", out)
  exit!(0)
end

start.call
load path
