# Every kind of frame, each reaching spin(), a busy leaf.  Usage:
#   labels.rb DIR
# The first two rounds record each stack spin() is called on, as Ruby's
# own backtrace labels it (caller_locations), into DIR/expect: one line a
# stack, root first, labels joined by ";".  Ruby 3.4 labels are taken as
# they are; older Rubies' are converted to the 3.4 style (below).  Then it
# prints "ready" and runs the rounds forever.  DIR/top.rb is written for
# <top (required)>.
DIR = ARGV.fetch(0)
NEW_LABELS = RUBY_VERSION >= "3.4"

# Ruby 3.4 names a method by its owner ("Shop#checkout", "Shop.report";
# anonymous owners, refinements and other objects' singletons stay bare).
# Older Rubies give the bare name: qualify it from this table of what 3.4
# prints, checked against 3.4's own labels when run there.  A name used by
# several methods (super) lists them innermost first.
QUAL = {
  "spin" => "Object#spin", "checkout" => "Shop#checkout", "report" => "Shop.report",
  "report2" => "Shop.report2", "rescuer" => "Shop#rescuer", "ensurer" => "Shop#ensurer",
  "blk_rescue" => "Shop#blk_rescue", "nested_rescue" => "Shop#nested_rescue",
  "blk_ensure" => "Shop#blk_ensure", "module_eval" => "Module#module_eval",
  "binding" => "Kernel#binding", "method_missing" => "Shop#method_missing",
  "ce" => "Shop#ce", "ce_blk" => "Shop#ce_blk", "me_k" => "Kernel#me_k",
  "host_eval" => "Object#host_eval", "greet" => ["Base#greet", "Child#greet"],
  "loud" => ["Quiet#loud", "Loud#loud"], "norm" => "Pt#norm", "dn" => "Dt#dn",
  "hi" => "Greets#hi", "deep" => "Outer::Inner#deep", "nm" => "Named#nm", "mf" => "Mf.mf",
  "initialize" => "Init#initialize", "with_arg" => "Shop#with_arg",
  "each" => "Array#each", "times" => "Integer#times", "loop" => "Kernel#loop",
  "load" => "Kernel#load", "eval" => "Kernel#eval", "instance_eval" => "BasicObject#instance_eval",
  "instance_exec" => "BasicObject#instance_exec", "class_eval" => "Module#class_eval",
  "tap" => "Kernel#tap", "public_send" => "Kernel#public_send", "new" => "Class#new",
  "call" => "Method#call", "each_slice" => "Enumerable#each_slice", "map" => "Array#map",
  "round" => "Object#round",
}

def qualify(base, seen)
  q = QUAL[base]
  if q.is_a?(Array)
    q = q[seen[base]] || base
    seen[base] += 1
  end
  q || base
end

# The stack as 3.4 labels it, root first.
def expected_stack
  seen = Hash.new(0)
  out = []
  skip = false
  caller_locations(1).each do |l|
    label, base = l.label, l.base_label
    if NEW_LABELS
      # check QUAL: 3.4's label is a prefix and the qualified name
      q = qualify(base, seen)
      unless label == q || label =~ /\Ablock (\(\d+ levels\) )?in #{Regexp.escape(q)}\z/
        out << "MISMATCH: #{label} is not #{q}"
      end
      out << label
      next
    end
    # 3.4 shows a rescue or ensure frame as its method and hides the frame
    # it was raised in (vm_backtrace.c: is_rescue_or_ensure_frame())
    if skip
      skip = label.start_with?("rescue in ", "ensure in ")
      next
    end
    skip = label.start_with?("rescue in ", "ensure in ")
    label = label.sub(/\A((rescue|ensure) in )+/, "")
    q = qualify(base, seen)
    out << (label.end_with?(base) ? label[0, label.size - base.size] + q : label)
  end
  out.reverse.join(";")
end

$expect = []
$record = true

def spin
  $expect << expected_stack if $record
  i = 0
  i += 1 while i < SPIN
end

class Shop
  def checkout
    [1].each { [2].each { 1.times { spin } } }
  end

  def self.report
    spin
  end

  class << self
    def report2
      spin
    end
  end

  define_method(:dm) { spin }

  def rescuer
    raise "x"
  rescue
    spin
  end

  def ensurer
    raise "x"
  ensure
    spin
  end

  def blk_rescue
    [1].each do
      begin
        raise "x"
      rescue
        spin
      end
    end
  end

  def nested_rescue
    raise "x"
  rescue
    begin
      raise "y"
    rescue
      spin
    end
  end

  def blk_ensure
    [1].each do
      begin
        raise "x"
      ensure
        spin
      end
    end
  rescue
    nil
  end

  def with_arg(_)
    spin
  end

  def method_missing(name, *args)
    name == :nothing_here ? spin : super
  end

  def respond_to_missing?(name, priv = false)
    name == :nothing_here || super
  end

  spin_in_body = -> { spin }
  define_method(:dm_lambda, &spin_in_body)
end

Shop.class_eval "def ce; spin; end"
Shop.class_eval <<~RUBY, __FILE__, __LINE__ + 1
  def ce_blk
    [1].each { spin }
  end
RUBY
Kernel.module_eval "def me_k; spin; end"

module Ref
  refine String do
    def shout
      spin
    end
  end
end
using Ref

def host_eval
  b = binding
  eval("spin", b)
  eval("[1].each { spin }", b)
end

class Base
  def greet
    spin
  end
end

class Child < Base
  def greet
    super
  end
end

module Loud
  def loud
    super
  end
end

class Quiet
  prepend Loud
  def loud
    spin
  end
end

Pt = Struct.new(:x) do
  def norm
    spin
  end
end
if defined?(Data) && Data.respond_to?(:define)
  Dt = Data.define(:y) do
    def dn
      spin
    end
  end
end

module Greets
  def hi
    spin
  end
end

class Person
  include Greets
end

module Outer
  class Inner
    def deep
      spin
    end
  end
end

Named = Class.new do
  def nm
    spin
  end
end

module Mf
  module_function

  def mf
    spin
  end
end

class Init
  def initialize
    spin
  end
end

$anon = Class.new do
  def anon_m
    spin
  end

  def self.anon_s
    spin
  end
end
$anon_mod = Module.new do
  def anonmod_m
    spin
  end
end
$anon_struct = Struct.new(:z) do
  def sn
    spin
  end
end
OBJ = Object.new
def OBJ.single
  spin
end
TOP = File.join(DIR, "top.rb")
File.write(TOP, "spin\n[1].each { spin }\n")

def round
  s = Shop.new
  s.checkout
  Shop.report
  Shop.report2
  s.dm
  s.dm_lambda
  s.rescuer
  begin
    s.ensurer
  rescue
    nil
  end
  s.blk_rescue
  s.nested_rescue
  s.blk_ensure
  s.nothing_here
  s.ce
  s.ce_blk
  me_k
  "a".shout
  host_eval
  Base.new.greet
  Child.new.greet
  Quiet.new.loud
  Pt.new(1).norm
  Dt.new(y: 1).dn if defined?(Dt)
  Person.new.hi
  Outer::Inner.new.deep
  Named.new.nm
  Mf.mf
  Init.new
  $anon.new.anon_m
  $anon.anon_s
  Object.new.extend($anon_mod).anonmod_m
  $anon_struct.new(1).sn
  OBJ.single
  s.instance_eval("spin")
  s.instance_eval { spin }
  s.instance_exec(1) { |_| spin }
  Shop.class_eval { spin }
  Shop.class_eval("spin")
  Shop.module_eval("[1].each { spin }")
  [1].each { s.instance_eval("spin") }
  proc { spin }.call
  lambda { spin }.call
  -> { [1].map { spin } }.()
  s.public_send(:ce)
  s.method(:ce).call
  [1].each(&s.method(:with_arg))
  [s].each(&:ce)
  [1, 2].each_slice(2) { spin }
  1.tap { spin }
  eval("spin")
  load TOP
  Thread.new { spin }.join
end

# about 5 ms a spin on this machine
SPIN = begin
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  n = 0
  n += 1 while n < 200_000
  d = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t
  [(200_000 * 0.005 / d).to_i, 10_000].max
end

rounds = 0
loop do
  round
  rounds += 1
  next unless rounds == 2

  $record = false
  File.write(File.join(DIR, "expect"), $expect.uniq.join("\n") + "\n")
  puts "ready"
  $stdout.flush
end
