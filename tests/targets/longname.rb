# A valid method whose name is 5000 characters long, spinning.
name = "f" * 4990 + "_long_name"
eval("def #{name}; loop {}; end")
puts "ready"
$stdout.flush
send(name)
