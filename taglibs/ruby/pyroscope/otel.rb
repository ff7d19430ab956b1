# SPDX-License-Identifier: MIT
#
# Span profiles for OpenTelemetry users, under pyrospy.
#
# Code written for the pyroscope-otel gem runs unchanged under pyrospy exec:
#
#   require "pyroscope/otel"
#   OpenTelemetry::SDK.configure do |c|
#     c.add_span_processor Pyroscope::Otel::SpanProcessor.new("app.cpu", "http://pyroscope:4040")
#   end
#
# For a local root span (no parent, or a remote one), from its start to its
# end, the fiber that started it carries the tags
#
#   span_id     the span's id, 16 lowercase hex digits
#   span_name   its name (unless add_span_name is false)
#   trace_id    its trace's id, 32 lowercase hex digits
#
# and the span gets the attribute pyroscope.profile.id = its span_id, the
# link Grafana follows from a trace to the profile.  (The gem names the
# tags profile_id and span; Grafana Pyroscope stores a profile_id as
# span_id.)  Spans inside a root span change nothing: their samples count
# for the root.  The arguments and the gem's settings are accepted;
# pyrospy's options decide where profiles go, so no pyroscope.profile.url
# is set.  Only the SDK's span processor interface is used (on_start,
# on_finish).  Each root span is a new tag set, held until the span ends;
# pyrospy.rb reuses the place of sets no longer held, so only 8192 root
# spans open at the same time are the limit (past it, a span is not
# tagged, never mis-tagged).
require "pyroscope"

module Pyroscope
  module Otel
    class Error < StandardError; end

    class SpanProcessor
      ZERO_SPAN_ID = ("\0" * 8).b.freeze
      ATTRIBUTE = "pyroscope.profile.id"
      KEYS = %w[span_id span_name trace_id].freeze

      attr_accessor :app_name, :pyroscope_endpoint, :root_span_only, :add_span_name, :add_url

      def initialize(app_name = nil, pyroscope_endpoint = nil)
        @app_name = app_name
        @pyroscope_endpoint = pyroscope_endpoint
        @root_span_only = true
        @add_span_name = true
        @add_url = true
        @open = {}  # span id of a root span running -> what Pyrospy._enter said
      end

      def on_start(span, parent_context = nil)
        return if @root_span_only && !root_span?(span, parent_context)

        ctx = span.context
        span_id = ctx.span_id.unpack1("H*")
        span.set_attribute(ATTRIBUTE, span_id)
        tags = { "span_id" => span_id, "trace_id" => ctx.trace_id.unpack1("H*") }
        tags["span_name"] = span.name.to_s if @add_span_name
        got = Pyrospy._enter(tags)
        @open[ctx.span_id] = got if got
      rescue StandardError => e
        OpenTelemetry.handle_error(exception: e, message: "pyrospy: span start") if defined?(OpenTelemetry.handle_error)
      end

      def on_finish(span)
        return if @open.empty?

        got = @open.delete(span.context.span_id)
        Pyrospy._leave(got, KEYS) if got
      rescue StandardError => e
        OpenTelemetry.handle_error(exception: e, message: "pyrospy: span finish") if defined?(OpenTelemetry.handle_error)
      end

      def force_flush(timeout: nil)
        success
      end

      def shutdown(timeout: nil)
        success
      end

      private

      def success
        defined?(OpenTelemetry::SDK::Trace::Export::SUCCESS) ? OpenTelemetry::SDK::Trace::Export::SUCCESS : 0
      end

      def root_span?(span, parent_context)
        parent = span.parent_span_id
        return true if parent.nil? || parent == ZERO_SPAN_ID
        return false unless parent_context && defined?(OpenTelemetry::Trace.current_span)

        current = OpenTelemetry::Trace.current_span(parent_context)
        !current.nil? && current.context.remote?
      rescue StandardError
        false
      end
    end
  end
end
