# The reference for pyrospy's Ruby lines: stackprof, sampling in-process (wall time)
# with Ruby's own rb_profile_frames(), runs a workload for a while, then
# writes how often each method of the workload (and Integer#times, Ruby
# code from 3.3) was seen on each of its lines, and exits.
#
#   ruby lineref.rb WORKLOAD OUT SECONDS INTERVAL_US
#
# OUT gets "method<TAB>line<TAB>total<TAB>self" lines: stackprof counts a
# block as its method (its frame is the method entry's), so blocks are
# counted under their method; total counts every frame, self the innermost
# one.  OUT is written under another name and renamed, so that a reader
# never sees half of it.
require "stackprof"

workload, out, seconds, interval = ARGV
path = File.expand_path(workload)

Thread.new do
  sleep Float(seconds)
  StackProf.stop
  res = StackProf.results
  File.open("#{out}.part", "w") do |f|
    res[:frames].each_value do |fr|
      name = fr[:name].to_s.sub(/\Ablock (\(\d+ levels\) )?in /, "")
      next unless fr[:file] == path ||
                  (name == "Integer#times" && fr[:file].to_s.start_with?("<internal:"))
      (fr[:lines] || {}).each do |line, (total, own)|
        f.puts "#{name}\t#{line}\t#{total}\t#{own}"
      end
    end
    f.puts "samples\t0\t#{res[:samples]}\t#{res[:mode]}"
  end
  File.rename("#{out}.part", out)
  exit!(0)
end

StackProf.start(mode: :wall, interval: Integer(interval), aggregate: true)
load path
