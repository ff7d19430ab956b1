# A root span around every unit of the seed's work (pyroscope/otel's
# processor on a minimal span): a new tag set at every span, for what
# spans cost pyrospy per sample.  Stops tagging past the registry's 8192
# sets: cost runs are shorter.
require "securerandom"
require "pyroscope/otel"

ZERO = ("\0" * 8).b
Context = Struct.new(:trace_id, :span_id)

class Span
  attr_reader :name, :context, :parent_span_id

  def initialize
    @name = "unit"
    @context = Context.new(SecureRandom.random_bytes(16), SecureRandom.random_bytes(8))
    @parent_span_id = ZERO
  end

  def set_attribute(_key, _value); end
end

def work(n)
  i = 0
  i += 1 while i < n
end

proc = Pyroscope::Otel::SpanProcessor.new("app.cpu", "http://localhost:4040")
puts "ready"
$stdout.flush
loop do
  s = Span.new
  proc.on_start(s, nil)
  work(200_000)
  proc.on_finish(s)
end
