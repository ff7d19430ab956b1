# A hot block of two lines: its body, and its end (where Ruby puts the
# block's leave).
def hot
  x = 0
  200_000.times do |i|
    x += i * i
  end
  x
end

puts "ready"
$stdout.flush
loop { hot }
