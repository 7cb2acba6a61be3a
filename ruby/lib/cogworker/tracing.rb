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
    CONTEXT_FIELDS = Native::TRACE_CONTEXT_FIELDS

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

    def self.tracer = ::OpenTelemetry.tracer_provider.tracer(Native::TRACER_NAME, VERSION)

    # A PRODUCER span around a push of `count` jobs (named and described by
    # the engine); yields the trace context (a Hash, empty when tracing is
    # off) for the jobs to carry and returns what the block returns (the
    # jid or jids pushed, which name the span's message as the engine says).
    def self.producing(class_name, queue, count = 1, &)
      span_of(-> { Native.producer_span(class_name.to_s, queue, count) }, &)
    end

    # `producing` for raw payloads (the span named by the engine after the
    # first); the engine gives the context to those without their own.
    def self.producing_payloads(payloads, &)
      span_of(-> { Native.payloads_span(payloads.first, payloads.size) }, &)
    end

    def self.span_of(name_and_attributes)
      return yield(current_context) unless recording?

      name, attributes = name_and_attributes.call
      tracer.in_span(name, attributes: attributes, kind: :producer) do |span|
        result = yield current_context
        Native.message_attributes(Array(result)).each { |key, value| span.set_attribute(key, value) }
        result
      end
    end
    private_class_method :span_of

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

    # The span's error status and exception event, as the engine words
    # them (an exception whose `message` raises is named by its class
    # alone: the span never changes what the job's failure says).
    def self.record_failure(span, error)
      message = begin
        error.message
      rescue Exception # rubocop:disable Lint/RescueException
        nil
      end
      description, attributes = Native.span_failure(error.class.name, message)
      span.status = ::OpenTelemetry::Trace::Status.error(description)
      begin
        span.record_exception(error)
      rescue Exception # rubocop:disable Lint/RescueException
        span.add_event('exception', attributes: attributes)
      end
    end
    private_class_method :record_failure
  end
end
