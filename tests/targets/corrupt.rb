# Scribbles on its own VM: each round defines a new method, victim_N,
# points its iseq's label at garbage (through Fiddle), runs it for 0.1 s,
# and puts the label back.  Between rounds clean runs for 0.1 s untouched.
# The garbage collector is off while the label is wrong (it would mark it);
# nothing else of the VM's reads it while the victim runs.
require "fiddle"

def monotonic
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def clean
  t = monotonic
  nil while monotonic - t < 0.1
end

def word(addr)
  Fiddle::Pointer.new(addr)[0, 8].unpack1("Q")
end

def poke(addr, value)
  Fiddle::Pointer.new(addr)[0, 8] = [value].pack("Q")
end

# Addresses of the words of the iseq body of method m that hold its label.
def label_slots(m)
  iseq = RubyVM::InstructionSequence.of(m)
  wrapper = Fiddle.dlwrap(iseq)
  label = Fiddle.dlwrap(iseq.label)
  (2..6).each do |i|
    p = word(wrapper + 8 * i)
    next if p < 4096 || p % 8 != 0
    next unless word(p + 8) == wrapper # rb_iseq_t: flags, wrapper, body
    body = word(p + 16)
    return (0...64).map { |j| body + 8 * j }.select { |a| word(a) == label }
  end
  raise "no iseq body found"
end

ARRAY = [1, 2, 3].freeze
DECOYS = [0, 1, 8, 0x14, 0xdeadbee1, 0x7ffffffff000, Fiddle.dlwrap(ARRAY), Fiddle.dlwrap(3.5)].freeze

puts "ready"
$stdout.flush
n = 0
loop do
  n += 1
  name = "victim_#{n}"
  Object.class_eval("def #{name}; t = monotonic; nil while monotonic - t < 0.1; end", __FILE__, __LINE__)
  where = label_slots(method(name))
  saved = where.map { |a| word(a) }
  GC.disable
  where.each { |a| poke(a, DECOYS[n % DECOYS.size]) }
  send(name)
  where.zip(saved).each { |a, v| poke(a, v) }
  GC.enable
  clean
end
