# A traced app: two threads, each running root spans around units of work
# (unit_T_I, with a nested span inside), and idle outside any span.  The
# tracer is a minimal OpenTelemetry-like span API (Debian has no
# OpenTelemetry SDK gem): it calls the span processor the way the SDK
# does, and OpenTelemetry::Trace.current_span finds a remote parent.
# Prints one line per span: "root unit_T_I SPAN_ID TRACE_ID ATTR" or
# "inner unit_T_I - - ATTR" (ATTR: pyroscope.profile.id, or "-").
require "securerandom"
require "pyroscope/otel"

UNITS = 6
SPIN = 0.3
ZERO = ("\0" * 8).b

module OpenTelemetry
  module Trace
    SpanContext = Struct.new(:trace_id, :span_id, :remote) do
      def remote?
        remote
      end
    end
    # what a context holds: the span it was made from
    ParentSpan = Struct.new(:context)

    def self.current_span(context)
      context && context[:span]
    end
  end
end

class Span
  attr_reader :name, :context, :parent_span_id, :attributes

  def initialize(name, context, parent_span_id)
    @name = name
    @context = context
    @parent_span_id = parent_span_id
    @attributes = {}
  end

  def set_attribute(key, value)
    @attributes[key] = value
    self
  end
end

class Tracer
  def initialize(processor)
    @processor = processor
  end

  def start(name, remote = nil)
    stack = (Thread.current[:spans] ||= [])
    parent = stack.last ? stack.last.context : remote
    trace_id = parent ? parent.trace_id : SecureRandom.random_bytes(16)
    span = Span.new(name, OpenTelemetry::Trace::SpanContext.new(trace_id, SecureRandom.random_bytes(8), false),
                    parent ? parent.span_id : ZERO)
    @processor.on_start(span, remote ? { span: OpenTelemetry::Trace::ParentSpan.new(remote) } : {})
    stack.push(span)
    span
  end

  def finish(span)
    Thread.current[:spans].pop
    @processor.on_finish(span)
  end
end

TRACER = Tracer.new(Pyroscope::Otel::SpanProcessor.new("span.cpu", "http://localhost:4040"))
LOCK = Mutex.new
LOG = []

def spin(secs)
  stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs
  nil while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
end

def inner_work
  spin(SPIN / 2)
end

def idle
  spin(0.1)
end

def attr(span)
  span.attributes["pyroscope.profile.id"] || "-"
end

def unit_body(name)
  spin(SPIN / 2)
  inner = TRACER.start("inner")
  inner_work
  TRACER.finish(inner)
  LOCK.synchronize { LOG << "inner #{name} - - #{attr(inner)}" }
end

def worker(t)
  UNITS.times do |i|
    name = "unit_#{t}_#{i}"
    # a method of its own per unit (a block would be "block in worker")
    Object.class_eval("def #{name}; unit_body(#{name.dump}); end", __FILE__, __LINE__)
    # the third unit of each thread continues a trace from elsewhere
    remote = i == 2 ? OpenTelemetry::Trace::SpanContext.new([t].pack("N").rjust(16, "\0"), [i].pack("N").rjust(8, "\0"), true) : nil
    span = TRACER.start("unit-of-work", remote)
    send(name)
    TRACER.finish(span)
    LOCK.synchronize do
      LOG << "root #{name} #{span.context.span_id.unpack1('H*')} #{span.context.trace_id.unpack1('H*')} #{attr(span)}"
    end
    idle
  end
end

sleep(ARGV[0] ? ARGV[0].to_f : 0.5)
[0, 1].map { |t| Thread.new { worker(t) } }.each(&:join)
puts LOG
$stdout.flush
