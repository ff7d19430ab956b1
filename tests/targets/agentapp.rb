# An application the agent finds (tests/test_agent.c): busy under the tag
# app_tag=ARGV[0], for as long as it runs.
require "pyrospy"

def work
  i = 0
  i += 1 while i < 20000
end

Pyrospy.tag_wrapper({ "app_tag" => ARGV[0] }) do
  puts "ready"
  $stdout.flush
  loop { work }
end
