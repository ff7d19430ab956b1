# Names that would drive a terminal (tests/test_hostile_names.c): the
# process names itself, and a thread, a method and its file are named,
# with ESC sequences, C1 controls (U+009B is a one-character CSI) and bidi
# overrides and isolates.  Next to them, names in other scripts, which
# must come out whole.
EVIL = "\e[2J\e]2;PWN\a\u009b31m\u202eevil\u2066x\u2069"

# 14 bytes of the 15 a name holds: OSC title, C1 CSI as UTF-8, RLO, a raw CSI byte
File.binwrite("/proc/self/comm", "\e]2;PWN\a\xC2\x9B\xE2\x80\xAE\x9B".b)

def spin
  i = 0
  i += 1 while i < 20_000
end

# a method's name cannot hold ESC (a define_method block is labelled
# "block in"), C1 and bidi characters it can
HOSTILE = "x\u009b31m\u202eevil\u2066x\u2069meth"
eval("def #{HOSTILE}\n  spin\nend\n", binding, EVIL + "file.rb", 1)

def café_日本
  send(HOSTILE)
end

t = Thread.new { loop { café_日本 } }
t.name = EVIL + "thread"
puts "ready"
$stdout.flush
t.join
