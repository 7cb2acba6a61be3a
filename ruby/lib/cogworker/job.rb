# frozen_string_literal: true

module Cogworker
  # Include in a class with `perform(*args)` to make it a job handler:
  #
  #   class HardWorker
  #     include Cogworker::Job
  #     cogworker_options queue: 'critical', retry: 5
  #     def perform(name, count) = ...
  #   end
  #   HardWorker.perform_async('bob', 5)
  module Job
    # The jid of the job this instance runs (set by the worker).
    attr_accessor :jid

    def self.included(base)
      base.extend(ClassMethods)
      Cogworker.register(base)
    end

    # Per-class options and the push methods.
    module ClassMethods
      # `unique_for:` seconds: while a job of this class with the same args
      # is pending (at most that long), pushing another returns nil.
      # `result_ttl:` seconds: keep what `perform` returns (JSON data) or the
      # error that long; read it with `Cogworker::Client.result(jid)`.
      def cogworker_options(queue: nil, retry: nil, unique_for: nil, result_ttl: nil)
        @cogworker_queue = queue.to_s if queue
        retry_option = binding.local_variable_get(:retry)
        @cogworker_retry = retry_option unless retry_option.nil?
        @cogworker_unique_for = unique_for.to_f if unique_for
        @cogworker_result_ttl = result_ttl.to_f if result_ttl
      end

      def cogworker_result_ttl
        @cogworker_result_ttl if defined?(@cogworker_result_ttl)
      end

      def cogworker_unique_for
        @cogworker_unique_for if defined?(@cogworker_unique_for)
      end

      # Seconds until the next retry, or nil for the default backoff:
      #   cogworker_retry_in { |count, error| 10 * (count + 1) }
      def cogworker_retry_in(&block)
        @cogworker_retry_in = block
      end

      def cogworker_queue
        @cogworker_queue || 'default'
      end

      def cogworker_retry
        defined?(@cogworker_retry) ? @cogworker_retry : true
      end

      def cogworker_retry_delay(count, error)
        @cogworker_retry_in&.call(count, error)
      end

      def perform_async(*args)
        Setter.new(self).perform_async(*args)
      end

      def perform_in(seconds, *args)
        Setter.new(self).perform_in(seconds, *args)
      end

      def perform_at(time, *args)
        Setter.new(self).perform_at(time, *args)
      end

      # Per-push options: `HardWorker.set(queue: 'low').perform_async(1)`.
      def set(queue: nil, retry: nil, unique_for: nil)
        Setter.new(self, queue: queue, retry: binding.local_variable_get(:retry), unique_for: unique_for)
      end

      # Fake-mode helpers (cogworker/testing).
      def jobs
        Testing.jobs_for(name)
      end

      def clear
        Testing.clear(name)
      end

      def drain
        Testing.drain(name)
      end

      def perform_one
        Testing.perform_one(name)
      end
    end

    # A class with per-push options. The push methods return the jid, or
    # nil for a unique job whose duplicate holds the lock.
    class Setter
      def initialize(klass, queue: nil, retry: nil, unique_for: nil)
        @klass = klass
        @queue = (queue || klass.cogworker_queue).to_s
        retry_option = binding.local_variable_get(:retry)
        @retry = retry_option.nil? ? klass.cogworker_retry : retry_option
        @unique_for = unique_for || klass.cogworker_unique_for
      end

      def perform_async(*args)
        push(args)
      end

      def perform_in(seconds, *args)
        push(args, delay: seconds)
      end

      def perform_at(time, *args)
        push(args, at: time)
      end

      private

      def push(args, at: nil, delay: nil)
        options = Client.options(queue: @queue, retry: @retry, at: at, delay: delay, unique_for: @unique_for,
                                 result_ttl: @klass.cogworker_result_ttl)
        Cogworker.client.push_job(@klass.name, args, options)
      end
    end
  end
end
