# Labels as Ruby 3.4 prints them: methods, singleton methods, blocks,
# class bodies and C functions.  The loop runs inside the class body so
# that <class:Shop> stays on the stack.
class Shop
  def initialize
    @items = [1, 2, 3]
  end

  def checkout
    total = 0
    @items.each do |x|
      total += price(x)
    end
    total
  end

  # The block does enough to be seen: one of `s += i * x' alone is read
  # live in 3-5 % of the samples on 3.3 and 3.4 (tests/test_rblines.c,
  # "Known inexact"), this one in 30-40 %.  Only operators the VM does
  # without a call (no C function's frame above the block).
  def price(x)
    s = 0
    2000.times { |i| s += i * x; s &= 0xffffff; s -= x; s |= i }
    s
  end

  def self.report
    new.checkout
  end

  puts "ready"
  $stdout.flush
  loop { report }
end
