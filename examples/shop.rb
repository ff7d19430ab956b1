# A small program to profile: a shop that prices baskets, where checkout
# costs three times what report does.  Runs for 5 seconds.
class Shop
  def initialize
    @prices = (0...1000).map { |i| i * 1.5 }
  end

  def price(basket)
    total = 0.0
    basket.each { |item| total += @prices[item % 1000] }
    total
  end

  def checkout
    price(0...30_000)
  end

  def report
    price(0...10_000)
  end
end

shop = Shop.new
customer = Thread.new do
  Thread.current.name = "customer"
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    shop.checkout
    shop.report
  end
end
customer.join
