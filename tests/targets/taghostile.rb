# Hostile tags: what a buggy or malicious program could leave where
# pyrospy reads.  Through the helper: a 1 MB value, invalid UTF-8, the
# characters that end a Pyroscope name.  Behind the helper's back: a raw
# 1 MB set with broken separators and control characters, and ids that
# point nowhere.
require "pyrospy"

def work(n)
  i = 0
  while i < n
    i += 1
  end
end

def helper_side
  work(100_000)
end

def raw_side
  work(100_000)
end

def nowhere_side
  work(100_000)
end

big = "x" * (1 << 20)
sets = Thread.main[:__pyrospy_sets__]
gens = Thread.main[:__pyrospy_gens__]
sets << "k\x1f#{"y" * (1 << 20)}\x1e\x1f\x1e=\x1fv\x1ea}b,c;d\nq\x1fz\x1e\x01\x02\x1f\x7f\xff\xfe"
# its id, gen 1 of its slot (see pyrospy.rb)
raw = Pyrospy::MAX_SETS + sets.size - 1
gens << raw
puts "ready"
$stdout.flush
loop do
  Pyrospy.tag_wrapper({ "big" => big, "bad\xff".b => "\xff\xfe".b, "a}b,c=d\n;" => "}{,;=\n" }) do
    helper_side
  end
  Thread.current[:__pyrospy_tags__] = raw
  raw_side
  Thread.current[:__pyrospy_tags__] = 99_999
  nowhere_side
  Thread.current[:__pyrospy_tags__] = 0
end
