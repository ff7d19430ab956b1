# A new class every 0.2 s, Shop<N>, each with its own method entry for
# price (the method's code is the same iseq each time), named by a
# constant; then the constant is removed and the class collected, so the
# next class, its method entry and its name may be put where the last
# ones were.  Like classes made and dropped by tests or plugins.
CLOCK = Process::CLOCK_MONOTONIC

puts "ready"
$stdout.flush
(0..).each do |n|
  shop = Class.new do
    def price
      t = Process.clock_gettime(CLOCK)
      nil while Process.clock_gettime(CLOCK) - t < 0.2
    end
  end
  Object.const_set("Shop#{n}", shop)
  shop.new.price
  Object.send(:remove_const, "Shop#{n}")
  shop = nil
  GC.start
end
