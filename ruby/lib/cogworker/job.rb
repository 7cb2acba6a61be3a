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
    def self.included(base)
      base.extend(ClassMethods)
      Cogworker.register(base)
    end

    # Per-class options and the push methods.
    module ClassMethods
      def cogworker_options(queue: nil, retry: nil)
        @cogworker_queue = queue.to_s if queue
        retry_option = binding.local_variable_get(:retry)
        @cogworker_retry = retry_option unless retry_option.nil?
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
      def set(queue: nil, retry: nil)
        Setter.new(self, queue: queue, retry: binding.local_variable_get(:retry))
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

    # A class with per-push options.
    class Setter
      def initialize(klass, queue: nil, retry: nil)
        @klass = klass
        @queue = (queue || klass.cogworker_queue).to_s
        retry_option = binding.local_variable_get(:retry)
        @retry = retry_option.nil? ? klass.cogworker_retry : retry_option
      end

      def perform_async(*args)
        push(args, nil)
      end

      def perform_in(seconds, *args)
        push(args, Time.now.to_f + seconds.to_f)
      end

      def perform_at(time, *args)
        push(args, time.to_f)
      end

      private

      def push(args, at)
        Cogworker.client.push_payload(Cogworker.payload(@klass.name, args, queue: @queue, retry: @retry, at: at))
      end
    end
  end
end
