# A hostile target (issue 16): Ruby started with LD_LIBRARY_PATH=DIR and a
# copy of its libruby in DIR, which then deletes the copy it runs from and
# puts in its place what it would have root's pyrospy open:
#   replace_lib.rb DIR fifo          a FIFO (open() blocks: no writer)
#   replace_lib.rb DIR link TARGET   a symbolic link to TARGET
lib = Dir[File.join(ARGV[0], "libruby*")].first or abort "no libruby in #{ARGV[0]}"
File.unlink(lib)
case ARGV[1]
when "fifo" then File.mkfifo(lib)
when "link" then File.symlink(ARGV[2], lib)
else abort "replace_lib.rb DIR fifo|link [TARGET]"
end

def work
  i = 0
  i += 1 while i < 100_000
end

$stdout.puts "ready"
$stdout.flush
loop { work }
