# A frame that sleeps holding known locals.  The ready line says what the
# program itself makes of each, as dump --locals should show it:
#   ready<TAB>name-hex:class-hex:value-hex<TAB>...
# inspect of the value, with the bounds pyrospy(1) documents: a String cut
# at 64 bytes (then "...", and C1 controls, bidi and invisible formatting
# characters escaped), an Integer past 100 digits as its number of
# digits, an Array or Hash as its length, a class or module by its name,
# other objects as #<Class>.
class Widget
end

class Name < String
end

# what would act on a terminal, which inspect leaves as it is
ACTS = Regexp.new("[\\u0080-\\u009f\\u00ad\\u061c\\u200b-\\u200f\\u2028-\\u202e" \
                  "\\u2060-\\u206f\\ufeff\\ufff9-\\ufffb\\u{e0000}-\\u{e007f}]")

def shown(v)
  case v
  when String
    s = v.bytesize > 64 ? v.byteslice(0, 64).inspect + "..." : v.inspect
    s.gsub(ACTS) { |c| format("\\u%04X", c.ord) }
  when Integer
    digits = v.abs.to_s.size
    return v.inspect if digits <= 100
    "<#{v < 0 ? "negative " : ""}Integer, #{digits} digits>"
  when Array then "<Array, len #{v.size}>"
  when Hash then "<Hash, len #{v.size}>"
  when nil, true, false, Float, Symbol, Module then v.inspect
  else "#<#{v.class}>"
  end
end

def report(b)
  fields = ["ready"]
  b.local_variables.each do |name|
    v = b.local_variable_get(name)
    fields << [name.to_s, v.class.to_s, shown(v)].map { |s| s.unpack1("H*") }.join(":")
  end
  puts fields.join("\t")
  $stdout.flush
end

def hold(arg_one, arg_two = "default", *rest, key: :word, **opts)
  none = nil
  yes = true
  no = false
  small = 42
  negative = -7
  zero = 0
  maxfix = 2**62 - 1
  big = 2**100 + 12345
  negbig = -(10**40) - 1
  huge = 10**700
  pi = 3.14159
  tiny = 1e-300
  large = 1e22
  whole = 100000.0
  third = 1.0 / 3
  negzero = -0.0
  heapfloat = 1e300 * 10
  inf = Float::INFINITY
  sym = :plain_symbol
  opsym = :<=>
  dynsym = ("dyn" + "amic sym").to_sym
  text = "h\u00e9llo \"world\"\n\u2603\t\\ \#{x} \e"
  empty = ""
  long_text = "x" * 100 + "y"
  shared = ("abcdefghij" * 10)[3..]
  hostile = "\e[31m\u202e\u0085\u00ad\u2028end"
  utf_long = "\u00e9" * 40
  raw = "\x00\x01abc\xff\x7f".b
  items = [1, 2, 3]
  many = (1..50).to_a
  mapping = { "a" => 1, "b" => 2 }
  bighash = (1..20).to_h { |i| [i, i] }
  obj = Widget.new
  subclass = Name.new("a String subclass")
  klass = Widget
  report(binding)
  loop { sleep 3600 }
end

hold(12, "two", 3, 4, key: :given, extra: 1)
