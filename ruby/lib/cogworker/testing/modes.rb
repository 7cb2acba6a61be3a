# frozen_string_literal: true


module Cogworker
  # Testing modes, no Redis needed (`require 'cogworker/testing'`):
  #   Cogworker::Testing.fake!   # pushes recorded: HardWorker.jobs, .drain, .perform_one, .clear
  #   Cogworker::Testing.inline! # pushes run at once
  #   Cogworker::Testing.disable!
  # Each takes an optional block, restoring the previous mode after it. A
  # push in a testing mode is validated and filled by the engine exactly as
  # a real push would be: what would be refused in production is refused here.
  module Testing
    # What is recorded and kept, and when it is forgotten, is the core's
    # (cogworker::host::testing), the same in Python: entering a mode from
    # real pushes starts with nothing recorded; the end of a block keeps
    # what was recorded (look at it after the block) until the next entry
    # or `clear`.

    # The recorded jobs of one class (a copy, oldest first); `clear`
    # forgets them.
    class RecordedJobs < Array
      def initialize(class_name)
        super(Native.testing_jobs(class_name))
        @class_name = class_name
      end

      def clear
        Native.testing_clear(@class_name)
        super
      end
    end

    class << self
      def fake!(&block) = switch('fake', &block)
      def inline!(&block) = switch('inline', &block)
      def disable!(&block) = switch(nil, &block)

      def enabled?
        !Native.testing_mode.nil?
      end

      # :fake, :inline or nil.
      def mode
        Native.testing_mode&.to_sym
      end

      # Inline mode: a push's job (as the engine prepared it and recorded
      # its run) runs at once, in the caller; what it raises, the push raises.
      def run_inline(job) = perform(job)

      def jobs_for(class_name) = RecordedJobs.new(class_name.to_s)

      # Forgets the recorded jobs of `class_name` (everything, kept results
      # included: nil).
      def clear(class_name = nil) = Native.testing_clear(class_name&.to_s)

      # Runs the oldest recorded job of `class_name`; IndexError if none.
      def perform_one(class_name) = Native.testing_perform_one(class_name.to_s, method(:perform))

      # Runs recorded jobs of `class_name` (including ones they push) until none are left.
      def drain(class_name) = Native.testing_drain(method(:perform), class_name.to_s)
      def drain_all = Native.testing_drain(method(:perform), nil)

      # Client#result in a testing mode: what a job run here came to.
      def result(jid) = Cogworker.result_of(jid, Native.testing_result(jid.to_s))

      def status(jid) = Native.testing_status(jid.to_s)

      private

      def switch(mode)
        previous = Native.set_testing_mode(mode)
        return unless block_given?

        begin
          yield
        ensure
          Native.set_testing_mode(previous)
        end
      end

      # Only registered job classes run, as in a worker (another raises the
      # core's InvalidArgument); the engine keeps the outcome. The job is the
      # thread's current one while it runs, as in a worker: its `bid`, and
      # its jid and class on log lines.
      def perform(job)
        klass = Cogworker.registry[job['class']]
        Native.testing_unknown_class(job['class'].to_s) unless klass

        instance = klass.new
        instance.jid = job['jid'] if instance.respond_to?(:jid=)
        instance.cogworker_delivery = Recorded.new(job) if instance.respond_to?(:cogworker_delivery=)
        outer = Thread.current[:cogworker_job]
        Thread.current[:cogworker_job] = { jid: job['jid'], class: job['class'] }
        begin
          Native.testing_run(job, -> { instance.perform(*job['args']) })
        ensure
          Thread.current[:cogworker_job] = outer
        end
      end

      # What a job run in a testing mode reads of its delivery: its
      # checkpoint stays in its payload; progress goes nowhere.
      Recorded = Struct.new(:payload) do
        def cancelled = false
        def stopping = false
        def progress(_percent, _message, _data) = nil
        def checkpoint(cursor) = (payload['cursor'] = cursor)
        def cursor = payload['cursor']
        def interrupt = nil

        def iterated(cursor, _max_runtime)
          payload['cursor'] = cursor
          true
        end
      end
    end
  end
end
