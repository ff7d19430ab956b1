# A hot line inside a block.
def hot
  x = 0
  200_000.times { |i| x += i * i }
  x
end

puts "ready"
$stdout.flush
loop { hot }
