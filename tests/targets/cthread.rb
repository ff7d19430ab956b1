# A thread Ruby never sees: started by pthread_create through Fiddle, with
# libc's sleep() as its start routine (it sleeps an hour and never enters
# Ruby), named "cworker" (the test finds its tid by that name): the
# kernel's name is inherited, so the main thread takes it for the while.
# The main thread waits.
require "fiddle"

PR_SET_NAME = 15
PR_GET_NAME = 16
libc = Fiddle.dlopen(nil)
int, ptr, long = Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP, Fiddle::TYPE_LONG
prctl = Fiddle::Function.new(libc["prctl"], [int, ptr, long, long, long], int)
create = Fiddle::Function.new(libc["pthread_create"], [ptr, ptr, ptr, ptr], int)
own = Fiddle::Pointer.malloc(16)
prctl.call(PR_GET_NAME, own, 0, 0, 0)
prctl.call(PR_SET_NAME, "cworker", 0, 0, 0)
th = Fiddle::Pointer.malloc(8)
err = create.call(th, nil, libc["sleep"], 3600)
prctl.call(PR_SET_NAME, own, 0, 0, 0)
abort "cthread.rb: pthread_create: error #{err}" if err != 0
$stdout.puts "ready"
$stdout.flush
sleep
