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

    # The push options given (nil: not given), by name as the engine takes
    # them: Cogworker::Native::PUSH_OPTIONS, the same in every language and
    # each checked by the engine (docs/ruby.md lists them). Times are Time
    # or epoch seconds, lengths of time Durations or seconds.
    def self.options(options)
      options.to_h { |name, value| [name.to_s, value] }.compact
    end

    # What a job pushed with `result_ttl` returned; raises JobFailed if it
    # failed for good; a Pending (with its status) otherwise. `wait:`
    # seconds: wait that long for a final outcome, blocked on Redis.
    def self.result(jid, wait: nil)
      Cogworker.client.result(jid, wait: wait)
    end

    # `status` and `cancel` of the default client, as `push` and `result`.
    def self.status(jid) = Cogworker.client.status(jid)
    def self.cancel(jid) = Cogworker.client.cancel(jid)

    def result(jid, wait: nil)
      return Testing.result(jid) if Testing.enabled?

      Cogworker.result_of(jid, @native.result(jid.to_s, wait&.to_f))
    end

    # Cancels the job `jid`, in whatever language it runs, and says where it
    # was: scheduled or retrying (taken off now), running (the job sees
    # `cancelled?`), queued (dropped unrun when a worker takes it), waiting
    # (a callback or later workflow step, dropped when handed over) or
    # unknown. Its status becomes cancelled.
    def cancel(jid)
      @native.cancel(jid.to_s)
    end

    # queued, scheduled, waiting, running, retrying, dead, succeeded,
    # failed, expired, cancelled or unknown.
    def status(jid)
      return Testing.status(jid) if Testing.enabled?

      @native.status(jid.to_s)
    end

    # The engine's client (a limiter made on this client's Redis uses it).
    attr_reader :native

    def initialize(config = Cogworker.config)
      @native = config.native_client
      @middleware = config.hooks.client_middleware
    end

    # Returns the jid (nil: a unique job's duplicate holds the lock).
    # `at:` (Time or epoch seconds) schedules it; `unique_for:` seconds
    # refuses duplicates (same class, queue, args) while one is pending;
    # the other options: see `Client.options`.
    def push(class_name, args = [], **options)
      push_job(class_name.to_s, self.class.args_array(args, 'args'), self.class.options(options))
    end

    # `args` as given, when it is an Array (as Sidekiq's Client.push
    # insists): anything else is refused, not wrapped.
    def self.args_array(args, field)
      return args if args.is_a?(Array)

      raise InvalidArgument, "invalid argument #{field} = #{args.inspect}: must be an Array of the job's arguments"
    end

    # One round trip for all; returns the jids. (With OpenTelemetry: one
    # PRODUCER span, whose trace context every job carries.)
    def push_bulk(class_name, args_list, **options)
      options = self.class.options(options)
      args_list = args_list.to_a.each_with_index.map { |args, i| self.class.args_array(args, "args_list[#{i}]") }
      Tracing.producing(class_name.to_s, options['queue'], args_list.size) do |context|
        push_through(class_name, args_list, options.merge(context))
      end
    end

    # `class_name(*args)` with options as `Client.options` builds them (in a
    # PRODUCER span whose trace context the job carries, with OpenTelemetry).
    def push_job(class_name, args, options)
      # No OpenTelemetry API: no span, no context (and no block) per push.
      return push_through(class_name, [args], options).first unless Tracing.enabled?

      Tracing.producing(class_name, options['queue']&.to_s) do |context|
        push_through(class_name, [args], options.merge(context)).first
      end
    end

    # Raw payloads (Hashes with at least 'class'). Client middleware sees
    # each as it will be stored (jid and times filled); nil for those it
    # stops, the rest in one round trip. (With OpenTelemetry: one PRODUCER
    # span; payloads without a trace context carry its.)
    def push_payloads(payloads)
      return [] if payloads.empty?

      Tracing.producing_payloads(payloads) { |context| @native.push_payloads(payloads, middleware, RUN_INLINE, context) }
    end

    private

    # Inline mode runs a job at once, in the caller (what it raises, the
    # push raises).
    RUN_INLINE = ->(job) { Testing.run_inline(job) }

    # Through the client middleware, then a testing mode's record or one
    # round trip: the engine's order.
    def push_through(class_name, args_list, options)
      bid = Batch.current_bid
      options = options.merge('bid' => bid) if bid && !options.key?('bid')
      @native.push_many(class_name.to_s, args_list.to_a, options, middleware, RUN_INLINE)
    end

    # The client middleware as the engine calls it (nil: none): the job, or
    # nil to stop it.
    def middleware
      return nil if @middleware.empty?

      ->(job) { job if @middleware.invoke_client(job['class'], job, job['queue']) }
    end
  end
end
