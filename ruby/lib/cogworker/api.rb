# frozen_string_literal: true

module Cogworker
  # The ops API: queues, the scheduled/retry/dead sets, processes, stats.
  # Every method is one call of the engine's API table (the same calls, with
  # the same names and results, in Python and Rust): `Api.calls` lists them
  # with their parameters. Set names: 'scheduled', 'retry', 'dead'.
  class Api
    def self.calls = Native.api_calls

    def initialize(config = Cogworker.config)
      @native = Native::Api.of_client(config.native_client)
    end

    # Runs the API call `name` with positional `args`.
    def call(name, *args)
      @native.call(name.to_s, args)
    end

    # Runs an admin command (`cogworker stats`, ...); the text it prints.
    def admin(command, arg = nil)
      @native.admin(command.to_s, arg&.to_s)
    end

    # Follows job `jid` (docs/long-jobs.md): yields `kind, value`:
    # `'progress', report` as the job reports, then `'finished', end` (its
    # kept result once final with `result_ttl`, else the last report of the
    # run that ended). Pub/sub, no polling. Ends early, quietly, once
    # `timeout` seconds have passed. Without a block, an Enumerator.
    def watch(jid, timeout: nil)
      return enum_for(:watch, jid, timeout: timeout) unless block_given?

      watch = @native.watch(jid.to_s)
      deadline = timeout && (Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout)
      loop do
        left = deadline && [deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC), 0.0].max
        event = watch.next(left&.to_f)
        break if event.nil?

        yield(*event)
        break if event[0] == 'finished'
      end
      nil
    end

    Native.api_calls.each do |name, params, _help|
      required = params.count { |p| !p.include?('=') }
      define_method(name) do |*args|
        unless args.size.between?(required, params.size)
          raise ArgumentError, "#{name}(#{params.join(', ')}): wrong number of arguments (given #{args.size})"
        end

        call(name, *args.map { |a| a.is_a?(Symbol) ? a.to_s : a })
      end
    end
  end
end
