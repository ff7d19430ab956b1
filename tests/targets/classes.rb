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

  def price(x)
    s = 0
    2000.times { |i| s += i * x }
    s
  end

  def self.report
    new.checkout
  end

  puts "ready"
  $stdout.flush
  loop { report }
end
