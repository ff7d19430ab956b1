# Tag sets made and given up fast, far past the 8192 the helper keeps at
# once (tests/targets/spanchurn.py, in Ruby): two threads run NSPANS
# (ARGV[0]) root spans in all, span number N around unit_K (K = N % 64, a
# method of its own) with a nested span inside, and gap outside any span.
# MODE (ARGV[1]): span (a minimal span API calling the span processor as
# the SDK does; Debian has no OpenTelemetry SDK gem) or wrap (no spans:
# Pyrospy.tag_wrapper("fn" => "unit_K", "seq" => "N"), a new tag set each
# time).  Prints one line per unit: "root N K SPAN_ID" (wrap: "wrap N K -").
require "pyroscope/otel"

NSPANS = (ARGV[0] || 30_000).to_i
MODE = ARGV[1] || "span"
KINDS = 64
ZERO = ("\0" * 8).b

Ctx = Struct.new(:trace_id, :span_id)

class Span
  attr_reader :name, :context, :parent_span_id

  def initialize(name, context, parent_span_id)
    @name = name
    @context = context
    @parent_span_id = parent_span_id
  end

  def set_attribute(_key, _value)
    self
  end
end

class MiniTracer
  def initialize(processor)
    @processor = processor
    @n = 0
    @lock = Mutex.new
  end

  def start(name, parent = nil)
    n = @lock.synchronize { @n += 1 }
    id = [(n * 0x9E3779B97F4A7C15) & (2**64 - 1) | 1].pack("Q>")
    ctx = Ctx.new(parent ? parent.trace_id : [n, 0x5eed].pack("Q>Q>"), id)
    span = Span.new(name, ctx, parent ? parent.span_id : ZERO)
    @processor.on_start(span, {})
    span
  end

  def finish(span)
    @processor.on_finish(span)
  end
end

def spin(secs)
  stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs
  nil while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
end

KINDS.times { |k| Object.class_eval("def unit_#{k}; spin(0.00015); end", __FILE__, __LINE__) }

def gap
  spin(0.00005)
end

TRACER = MODE == "wrap" ? nil : MiniTracer.new(Pyroscope::Otel::SpanProcessor.new("spanchurn.cpu"))
COUNT = Mutex.new
$next = 0
LOG = []

def worker
  out = []
  loop do
    n = COUNT.synchronize { ($next += 1) - 1 }
    break if n >= NSPANS

    k = n % KINDS
    if TRACER
      root = TRACER.start("unit_#{k}")
      inner = TRACER.start("inner", root.context)
      send("unit_#{k}")
      TRACER.finish(inner)
      TRACER.finish(root)
      out << "root #{n} #{k} #{root.context.span_id.unpack1('H*')}"
    else
      Pyrospy.tag_wrapper({ "fn" => "unit_#{k}", "seq" => n.to_s }) { send("unit_#{k}") }
      out << "wrap #{n} #{k} -"
    end
    gap
  end
  COUNT.synchronize { LOG.concat(out) }
end

sleep 0.5
Array.new(2) { Thread.new { worker } }.each(&:join)
puts LOG
$stdout.flush
