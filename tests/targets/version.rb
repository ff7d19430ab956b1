$stdout.puts "ready #{RUBY_VERSION}"
$stdout.flush
sleep
