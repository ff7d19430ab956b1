# What the span processor (pyroscope/otel, pyrospy's) costs the program: ns
# per root span (on_start and on_finish), against a processor of the same
# shape that only sets the span's attribute (short runs: on a busy machine
# fewer of them are preempted); then again past the 8192 tag sets the
# helper keeps at once, where each root span's new set takes the place of
# the oldest one given up.
# Prints "span_ns empty_ns reused_ns", medians of 50 runs.
require "securerandom"
require "pyroscope/otel"

ZERO = ("\0" * 8).b
Context = Struct.new(:trace_id, :span_id)

class Span
  attr_reader :name, :context, :parent_span_id, :attributes

  def initialize
    @name = "GET /cart"
    @context = Context.new(SecureRandom.random_bytes(16), SecureRandom.random_bytes(8))
    @parent_span_id = ZERO
    @attributes = {}
  end

  def set_attribute(key, value)
    @attributes[key] = value
  end
end

class Empty
  def on_start(span, _parent_context)
    span.set_attribute("pyroscope.profile.id", span.context.span_id.unpack1("H*")) if span.parent_span_id == ZERO
  end

  def on_finish(span)
    span.attributes["pyroscope.profile.id"]
  end
end

def run(proc, n)
  spans = Array.new(n) { Span.new }
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  spans.each do |s|
    proc.on_start(s, nil)
    proc.on_finish(s)
  end
  (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t) / n * 1e9
end

res = { Pyroscope::Otel::SpanProcessor.new("app.cpu", "http://localhost:4040") => [], Empty.new => [] }
50.times { res.each_key { |p| res[p] << run(p, 150) } }
med = ->(a) { a.sort[a.size / 2] }
real, empty = res.values
proc = Pyroscope::Otel::SpanProcessor.new("app.cpu", "http://localhost:4040")
run(proc, 10_000)
reused = Array.new(50) { run(proc, 150) }
puts format("%.0f %.0f %.0f", med.(real), med.(empty), med.(reused))
