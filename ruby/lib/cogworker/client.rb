# frozen_string_literal: true

require 'json'

module Cogworker
  # Pushes jobs to handlers in any language, by class name.
  #
  #   Cogworker::Client.push('Billing::Charge', [42], queue: 'critical')
  #
  # Arguments must be native JSON types (String, Integer, Float, true, false,
  # nil, Array, Hash with String keys); anything else raises
  # Cogworker::InvalidArgument (an ArgumentError) naming it.
  class Client
    def self.push(class_name, args = [], **options)
      Cogworker.client.push(class_name, args, **options)
    end

    def self.push_bulk(class_name, args_list, **options)
      Cogworker.client.push_bulk(class_name, args_list, **options)
    end

    # The push options as the engine takes them (Time and Duration as
    # epoch seconds / seconds).
    def self.options(queue: nil, retry: nil, at: nil, delay: nil, unique_for: nil, result_ttl: nil)
      { 'queue' => queue&.to_s, 'retry' => binding.local_variable_get(:retry), 'at' => at&.to_f,
        'delay' => delay&.to_f, 'unique_for' => unique_for&.to_f, 'result_ttl' => result_ttl&.to_f }
    end

    # What a job pushed with `result_ttl` returned; raises JobFailed if it
    # failed for good; a Pending (with its status) otherwise. `wait:`
    # seconds: wait that long for a final outcome, blocked on Redis.
    def self.result(jid, wait: nil)
      Cogworker.client.result(jid, wait: wait)
    end

    def result(jid, wait: nil)
      return Testing.result(jid) if Testing.enabled?

      Cogworker.result_of(jid, @native.result(jid.to_s, wait&.to_f))
    end

    # queued, scheduled, running, retrying, dead, succeeded, failed or unknown.
    def status(jid)
      return Testing.status(jid) if Testing.enabled?

      @native.status(jid.to_s)
    end

    def initialize(config = Cogworker.config)
      @native = config.native_client
      @middleware = config.hooks.client_middleware
    end

    # Returns the jid (nil: a unique job's duplicate holds the lock).
    # `at:` (Time or epoch seconds) schedules it; `unique_for:` seconds
    # refuses duplicates (same class, queue, args) while one is pending.
    def push(class_name, args = [], **options)
      push_job(class_name.to_s, Array(args), self.class.options(**options))
    end

    # One round trip for all; returns the jids. (With OpenTelemetry: one
    # PRODUCER span, whose trace context every job carries.)
    def push_bulk(class_name, args_list, **options)
      options = self.class.options(**options)
      args_list = args_list.to_a
      Tracing.producing(class_name.to_s, options['queue'], args_list.size) do |context|
        push_many(class_name, args_list, options.merge(context))
      end
    end

    # `class_name(*args)` with options as `Client.options` builds them (in a
    # PRODUCER span whose trace context the job carries, with OpenTelemetry).
    def push_job(class_name, args, options)
      Tracing.producing(class_name, options['queue']) { |context| push_one(class_name, args, options.merge(context)) }
    end

    # Raw payloads (Hashes with at least 'class'). Client middleware sees
    # each as it will be stored (jid and times filled); nil for those it
    # stops, the rest in one round trip. (With OpenTelemetry: one PRODUCER
    # span; payloads without a trace context carry its.)
    def push_payloads(payloads)
      return push_raw(payloads) if payloads.empty?

      Tracing.producing_payloads(payloads) { |traced| push_raw(traced) }
    end

    private

    def push_many(class_name, args_list, options)
      unless @middleware.empty?
        return push_raw(args_list.map { |args| Native.prepare_job(class_name.to_s, args, options) })
      end
      return args_list.map { |args| Testing.record(Native.prepare_job(class_name.to_s, args, options)) } if Testing.enabled?

      @native.push_many(class_name.to_s, args_list.to_a, options)
    end

    def push_one(class_name, args, options)
      return push_raw([Native.prepare_job(class_name, args, options)]).first unless @middleware.empty?
      return Testing.record(Native.prepare_job(class_name, args, options)) if Testing.enabled?

      @native.push_many(class_name, [args], options).first
    end

    def push_raw(payloads)
      return push_prepared(payloads) if @middleware.empty?

      jobs = payloads.map do |payload|
        job = Native.prepare_payload(payload)
        job if @middleware.invoke_client(job['class'], job, job['queue'])
      end
      pushed = push_prepared(jobs.compact).each
      jobs.map { |job| job && pushed.next }
    end

    def push_prepared(payloads)
      return payloads.map { |p| Testing.record(Native.prepare_payload(p)) } if Testing.enabled?

      @native.push_payloads(payloads)
    end
  end
end
