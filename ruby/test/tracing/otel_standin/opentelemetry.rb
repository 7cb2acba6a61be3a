# frozen_string_literal: true

# A STAND-IN for the opentelemetry-api gem, for the tests only: the gem is
# neither in Debian nor reachable here (no RubyGems). It offers exactly the
# calls Cogworker::Tracing makes, with the gem's names and signatures
# (OpenTelemetry.tracer_provider.tracer, Tracer#in_span / #start_span with
# attributes: and kind:, OpenTelemetry.propagation.inject / extract in the
# W3C format, OpenTelemetry::Context.with_current, OpenTelemetry::Trace
# .with_span, Span#set_attribute / #status= / #record_exception /
# #add_event / #finish, Trace::Status.error), and records finished spans,
# also as JSON lines in the file OTEL_SPANS_FILE names when set.
require 'json'
require 'securerandom'

module OpenTelemetry
  # The span (or remote span context) that is current, per thread.
  class Context
    attr_reader :span

    def initialize(span = nil) = @span = span

    def self.current = Thread.current[:otel_standin_context] || new

    def self.with_current(context)
      previous = Thread.current[:otel_standin_context]
      Thread.current[:otel_standin_context] = context
      yield context
    ensure
      Thread.current[:otel_standin_context] = previous
    end
  end

  SpanContext = Struct.new(:hex_trace_id, :hex_span_id, :flags)

  module Trace
    # Status of a span.
    class Status
      attr_reader :code, :description

      def initialize(code, description) = (@code, @description = code, description)
      def self.error(description = '') = new('ERROR', description)
    end

    def self.with_span(span)
      Context.with_current(Context.new(span)) { |c| yield span, c }
    end

    # A recording span.
    class Span
      attr_reader :name, :kind, :context, :parent_span_id, :attributes, :events
      attr_accessor :status

      def initialize(name, kind, attributes, parent)
        @name = name
        @kind = kind
        @attributes = attributes.dup
        @parent_span_id = parent&.hex_span_id
        @context = SpanContext.new(parent&.hex_trace_id || SecureRandom.hex(16), SecureRandom.hex(8), parent&.flags || '01')
        @events = []
        @status = Status.new('UNSET', '')
      end

      def set_attribute(key, value) = @attributes[key] = value
      def add_event(name, attributes: {}) = @events << [name, attributes]

      def record_exception(error)
        add_event('exception', attributes: { 'exception.type' => error.class.name, 'exception.message' => error.message })
      end

      def finish = StandIn.finished(self)

      def to_h
        { 'name' => name, 'kind' => kind.to_s.upcase, 'trace_id' => context.hex_trace_id,
          'span_id' => context.hex_span_id, 'parent_id' => parent_span_id, 'attributes' => attributes,
          'status' => status.code, 'events' => events.map(&:first) }
      end
    end

    # Starts spans, children of the current context's span.
    class Tracer
      def start_span(name, attributes: nil, kind: nil, **)
        parent = Context.current.span
        Span.new(name, kind, attributes || {}, parent.is_a?(Span) ? parent.context : parent)
      end

      def in_span(name, attributes: nil, kind: nil, **)
        span = start_span(name, attributes: attributes, kind: kind)
        Trace.with_span(span) { |s, c| yield s, c }
      rescue Exception => e # rubocop:disable Lint/RescueException
        span&.record_exception(e)
        span&.status = Status.error("Unhandled exception of type: #{e.class}")
        raise
      ensure
        span&.finish
      end
    end

    # Hands out the tracer.
    class TracerProvider
      def tracer(_name = nil, _version = nil) = Tracer.new
    end
  end

  # The gem's default global provider until an SDK registers one: it makes
  # only non-recording spans. Here it makes none (a test looks for that).
  module Internal
    class ProxyTracerProvider < Trace::TracerProvider
      def tracer(_name = nil, _version = nil) = raise('a span was made with no SDK set up')
    end
  end

  # W3C trace context, as the gem's default propagator writes and reads it.
  class Propagation
    def inject(carrier)
      span = Context.current.span
      context = span.is_a?(Trace::Span) ? span.context : span
      carrier['traceparent'] = "00-#{context.hex_trace_id}-#{context.hex_span_id}-#{context.flags}" if context
    end

    def extract(carrier)
      parts = carrier['traceparent'].to_s.split('-')
      return Context.current unless parts.size == 4

      Context.new(SpanContext.new(parts[1], parts[2], parts[3]))
    end
  end

  # Where the finished spans go.
  module StandIn
    @spans = []
    @lock = Mutex.new

    def self.finished(span)
      @lock.synchronize { @spans << span }
      file = ENV.fetch('OTEL_SPANS_FILE', nil)
      File.open(file, 'a') { |f| f.puts(JSON.generate(span.to_h)) } if file
    end

    def self.spans = @lock.synchronize { @spans.dup }
    def self.clear = @lock.synchronize { @spans.clear }
  end

  def self.tracer_provider = @tracer_provider ||= Trace::TracerProvider.new

  # As the gem does: the provider an SDK registers (a test also sets the proxy back).
  def self.tracer_provider=(provider)
    @tracer_provider = provider
  end
  def self.propagation = @propagation ||= Propagation.new
end
