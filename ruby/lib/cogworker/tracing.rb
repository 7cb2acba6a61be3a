# frozen_string_literal: true

begin
  require 'opentelemetry'
rescue LoadError
  nil # no opentelemetry-api gem: pushes and jobs are not traced
end

module Cogworker
  # OpenTelemetry, when the opentelemetry-api gem can be required (no
  # dependency otherwise): a push opens a PRODUCER span and the job carries
  # its W3C trace context (`traceparent`, `tracestate`); the worker runs
  # `perform` inside a CONSUMER span that continues it, so a job's work
  # shows under the request that pushed it, in whatever language that was.
  # The same spans and attributes as the Python layer's.
  module Tracing
    CONTEXT_FIELDS = %w[traceparent tracestate].freeze

    def self.enabled? = defined?(::OpenTelemetry.propagation) ? true : false

    # Whether spans are recorded: the API is loaded and an SDK is set up
    # (until one registers its provider, the API's default is a proxy).
    # Asked at every push and job: an application may set one up late.
    # Without one no span is made, as in Python.
    def self.recording?
      return false unless enabled?

      proxy = defined?(::OpenTelemetry::Internal::ProxyTracerProvider) && ::OpenTelemetry::Internal::ProxyTracerProvider
      !(proxy && ::OpenTelemetry.tracer_provider.instance_of?(proxy))
    end

    # The trace context current here for a job to carry: a push's PRODUCER
    # span, or, where nothing records, one that is current anyway (a remote
    # parent, say), for a process downstream that may record. Empty when
    # there is none.
    def self.current_context
      return {} unless enabled?

      carrier = {}
      ::OpenTelemetry.propagation.inject(carrier)
      carrier.slice(*CONTEXT_FIELDS)
    end

    def self.tracer = ::OpenTelemetry.tracer_provider.tracer('cogworker', VERSION)

    # A PRODUCER span around a push of `count` jobs (named and described by
    # the engine); yields the trace context (a Hash, empty when tracing is
    # off) for the jobs to carry and returns what the block returns (a jid
    # names the span's message).
    def self.producing(class_name, queue, count = 1)
      return yield(current_context) unless recording?

      name, attributes = Native.producer_span(class_name.to_s, queue, count)
      tracer.in_span(name, attributes: attributes, kind: :producer) do |span|
        result = yield current_context
        span.set_attribute('messaging.message.id', result) if result.is_a?(String)
        result
      end
    end

    # `producing` for raw payloads: yields the payloads, those without a
    # trace context of their own given the span's (copies: the caller's
    # Hashes are left as they were).
    def self.producing_payloads(payloads, &)
      first = payloads.first || {}
      producing(first['class'].to_s, first['queue'], payloads.size) do |context|
        next yield(payloads) if context.empty?

        yield(payloads.map { |p| p.key?('traceparent') ? p : p.merge(context) })
      end
    end

    # A CONSUMER span around `perform` (named and described by the engine),
    # a child of the pushing span when the job carries its context; a
    # failure sets its status and records the exception, and is raised on
    # unchanged.
    def self.consuming(delivery, &)
      return yield unless recording? && (name, attributes, carrier = delivery.job_span)

      parent = ::OpenTelemetry.propagation.extract(carrier)
      ::OpenTelemetry::Context.with_current(parent) { consumer_span(name, attributes, &) }
    end

    def self.consumer_span(name, attributes)
      span = tracer.start_span(name, attributes: attributes, kind: :consumer)
      ::OpenTelemetry::Trace.with_span(span) { yield }
    rescue Exception => e # rubocop:disable Lint/RescueException -- the span records every way a job fails
      record_failure(span, e) if span
      raise
    ensure
      span&.finish
    end
    private_class_method :consumer_span

    # The span's error status and exception event; an exception whose
    # `message` raises is named by its class alone (the span never changes
    # what the job's failure says).
    def self.record_failure(span, error)
      description = begin
        "#{error.class}: #{error.message}"
      rescue Exception # rubocop:disable Lint/RescueException
        error.class.name
      end
      span.status = ::OpenTelemetry::Trace::Status.error(description)
      begin
        span.record_exception(error)
      rescue Exception # rubocop:disable Lint/RescueException
        span.add_event('exception', attributes: { 'exception.type' => error.class.name })
      end
    end
    private_class_method :record_failure
  end
end
