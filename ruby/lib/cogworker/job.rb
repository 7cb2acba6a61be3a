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
    # The delivery this instance runs (set by the worker).
    attr_writer :cogworker_delivery

    # Was the job cancelled (`Cogworker::Api.new.cancel(jid)`, from any
    # language) while it runs? A long job checks it to stop early; however
    # it then ends, the job is filed as cancelled, not retried.
    def cancelled?
      cogworker_delivery&.cancelled || false
    end

    # Reports how far the job is (docs/long-jobs.md): `percent` 0 to 100
    # (nil when there is no total), a short `message`, small JSON `data`.
    # Cheap in a tight loop: the latest is written at most every 250 ms;
    # `Cogworker::Api.new.progress(jid)` reads it from any language.
    def progress(percent = nil, message = nil, data: nil)
      cogworker_delivery&.progress(percent&.to_f, message, data)
      nil
    end

    # Saves `cursor` (JSON data, at most 64 KiB) as where the job resumes:
    # whatever runs it again (recovery after a crash, a shutdown's
    # give-back, a retry, `interrupt!`) starts it with this `cursor`.
    def checkpoint(cursor)
      cogworker_delivery&.checkpoint(cursor)
      nil
    end

    # Where the job resumes: its last checkpoint, the one it was pushed
    # with (`cursor:`), or nil on a first run.
    def cursor
      cogworker_delivery&.cursor
    end

    # Should the job stop now? Its worker is shutting down, it was
    # cancelled, or its time limit is near: stop between items, then
    # return (or `interrupt!` to resume later).
    def stopping?
      cogworker_delivery&.stopping || false
    end

    # The job stops here to resume later: when `perform` returns it goes
    # back on its queue with its last checkpoint, not counted as a failure
    # or a retry.
    def interrupt!
      cogworker_delivery&.interrupt
      nil
    end

    # The batch the job belongs to, if any: `Cogworker::Batch.new(bid: bid)`
    # adds more jobs to it from here.
    def bid
      return nil unless defined?(@cogworker_delivery) && @cogworker_delivery

      bid = @cogworker_delivery.payload&.[]('bid')
      bid.is_a?(String) ? bid : nil
    end

    # The delivery this instance runs, if a worker runs it.
    def cogworker_delivery
      defined?(@cogworker_delivery) ? @cogworker_delivery : nil
    end
    private :cogworker_delivery

    def self.included(base)
      base.extend(ClassMethods)
      Cogworker.register(base)
    end

    # Per-class options and the push methods.
    module ClassMethods
      # Every push's options unless it gives its own (`set`), checked here
      # so a misspelt name fails where it is written: `queue:`, `retry:`,
      # `unique_for:` seconds (while a job of this class with the same args
      # is pending, at most that long, pushing another returns nil),
      # `result_ttl:` seconds (keep what `perform` returns, JSON data, or
      # the error that long; read it with `Cogworker::Client.result(jid)`),
      # `expires_in:`, `limits:`, `group:` (its tenant within its queue, or a
      # Proc of its args that returns one: see docs/fairness.md), `key:` (a
      # flow key, or a Proc: with `debounce:` or `unique_for:`, see
      # docs/flow-control.md), ... (see `Client.options`).
      def cogworker_options(**options)
        options = cogworker_push_options.merge(Client.options(options))
        # A Proc of the args (group:, key:) is called at each push, with them.
        Native.check_options(name || 'AnonymousJob', options)
        @cogworker_push_options = options
      end

      def cogworker_push_options
        defined?(@cogworker_push_options) ? @cogworker_push_options : {}
      end

      # Seconds until the next retry, or nil for the default backoff:
      #   cogworker_retry_in { |count, error| 10 * (count + 1) }
      def cogworker_retry_in(&block)
        @cogworker_retry_in = block
      end

      def cogworker_queue
        cogworker_push_options.fetch('queue', 'default').to_s
      end

      def cogworker_retry
        cogworker_push_options.fetch('retry', true)
      end

      def cogworker_retry_delay(count, error)
        @cogworker_retry_in&.call(count, error)
      end

      # The class's push options as they are: nothing downstream changes them.
      def perform_async(*args)
        Cogworker.client.push_job(name, args, cogworker_push_options)
      end

      def perform_in(seconds, *args)
        Setter.new(self).perform_in(seconds, *args)
      end

      def perform_at(time, *args)
        Setter.new(self).perform_at(time, *args)
      end

      # A workflow step (see Workflow): `Parse.step(takes_result: true)`.
      def step(*args, takes_result: false)
        Setter.new(self).step(*args, takes_result: takes_result)
      end

      # Per-push options: `HardWorker.set(queue: 'low').perform_async(1)`.
      def set(**options)
        Setter.new(self, **options)
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

    # The name and push options of a handler given where a callback or a
    # workflow step is named: a job class (or its `set(...)`) carries the
    # options it was declared with, under those given here; a name carries
    # none.
    def self.handler_and_options(handler, options)
      given = Client.options(options)
      case handler
      when Setter then [handler.klass.name, handler.options.merge(given)]
      when Module
        declared = handler.respond_to?(:cogworker_push_options) ? handler.cogworker_push_options : {}
        [handler.name, declared.merge(given)]
      else [handler.to_s, given]
      end
    end

    # A class with per-push options. The push methods return the jid, or
    # nil for a unique job whose duplicate holds the lock.
    class Setter
      attr_reader :klass, :options

      def initialize(klass, **options)
        @klass = klass
        @options = klass.cogworker_push_options.merge(Client.options(options))
      end

      def perform_async(*args)
        push(args)
      end

      def perform_in(seconds, *args)
        push(args, 'delay' => seconds)
      end

      def perform_at(time, *args)
        push(args, 'at' => time)
      end

      def step(*args, takes_result: false)
        fields = Native.prepare_job(@klass.name, args, @options)
        takes_result ? fields.merge('takes_result' => true) : fields
      end

      private

      def push(args, timing = {})
        Cogworker.client.push_job(@klass.name, args, @options.merge(timing))
      end
    end
  end
end
