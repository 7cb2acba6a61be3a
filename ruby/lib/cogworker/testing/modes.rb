# frozen_string_literal: true

require 'json'
require 'monitor'

module Cogworker
  # Testing modes, no Redis needed (`require 'cogworker/testing'`):
  #   Cogworker::Testing.fake!   # pushes recorded: HardWorker.jobs, .drain, .perform_one, .clear
  #   Cogworker::Testing.inline! # pushes run at once
  #   Cogworker::Testing.disable!
  # Each takes an optional block, restoring the previous mode after it. A
  # push in a testing mode is validated and filled by the engine exactly as
  # a real push would be: what would be refused in production is refused here.
  module Testing
    @mode = nil
    @jobs = Hash.new { |h, k| h[k] = [] }
    @lock = Monitor.new

    class << self
      def fake!(&block) = switch(:fake, &block)
      def inline!(&block) = switch(:inline, &block)
      def disable!(&block) = switch(nil, &block)

      def enabled?
        !@mode.nil?
      end

      def mode
        @mode
      end

      # A push in a testing mode (the job as the engine prepared it):
      # recorded (fake) or run (inline). Returns its jid.
      def record(job_json)
        job = JSON.parse(job_json)
        if @mode == :inline
          perform(job)
        else
          @lock.synchronize { @jobs[job['class']] << job }
        end
        job['jid']
      end

      def jobs_for(class_name)
        @lock.synchronize { @jobs[class_name.to_s] }
      end

      def clear(class_name = nil)
        @lock.synchronize { class_name ? @jobs.delete(class_name.to_s) : @jobs.clear }
      end

      def perform_one(class_name)
        job = @lock.synchronize { @jobs[class_name.to_s].shift }
        raise IndexError, "no #{class_name} jobs recorded" unless job

        perform(job)
      end

      def drain(class_name)
        count = 0
        until jobs_for(class_name).empty?
          perform_one(class_name)
          count += 1
        end
        count
      end

      private

      def switch(mode)
        previous = @mode
        @mode = mode
        return unless block_given?

        begin
          yield
        ensure
          @mode = previous
        end
      end

      # Only registered job classes run, as in a worker.
      def perform(job)
        klass = Cogworker.registry[job['class']]
        raise NameError, "no job class registered as #{job['class']}" unless klass

        instance = klass.new
        instance.jid = job['jid'] if instance.respond_to?(:jid=)
        instance.perform(*job['args'])
      end
    end
  end
end
