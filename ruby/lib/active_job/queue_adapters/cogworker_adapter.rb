# frozen_string_literal: true

require 'active_job'
require 'cogworker' unless defined?(Cogworker::Job)

module ActiveJob
  module QueueAdapters
    # Runs ActiveJob jobs on cogworker:
    #
    #   config.active_job.queue_adapter = :cogworker      # Rails
    #   ActiveJob::Base.queue_adapter = :cogworker        # plain ActiveJob
    #
    # Each job is pushed as a JobWrapper job whose `wrapped` field names the
    # ActiveJob class (the dashboard shows that name and the job's own
    # arguments) and whose one argument is the serialized job. `retry_on`
    # and `discard_on` work as in Rails' docs: ActiveJob re-enqueues through
    # this adapter; an exception that escapes them fails the cogworker job,
    # which then retries (25 times, then dead) as any other. `priority` is
    # ignored: cogworker has weighted queues, not priorities.
    class CogworkerAdapter
      def enqueue(job)
        push([job]).first
      end

      def enqueue_at(job, timestamp)
        push([job], at: timestamp).first
      end

      # ActiveJob.perform_all_later (Rails >= 7.1): one round trip per
      # run-at time. Returns how many were pushed.
      def enqueue_all(jobs)
        jobs.group_by(&:scheduled_at).sum do |scheduled_at, group|
          at = scheduled_at&.to_f
          pushed = push(group, at: at)
          group.zip(pushed).each { |job, jid| job.successfully_enqueued = true if jid && job.respond_to?(:successfully_enqueued=) }
          pushed.compact.size
        end
      end

      # Rails >= 7.2: a job enqueued inside a transaction is pushed after
      # the commit, so a worker never reads rows that are not there yet.
      def enqueue_after_transaction_commit?
        true
      end

      private

      def push(jobs, at: nil)
        payloads = jobs.map do |job|
          payload = { 'class' => JobWrapper.name, 'wrapped' => job.class.name, 'queue' => job.queue_name,
                      'args' => [job.serialize] }
          payload['at'] = at.to_f if at
          payload
        end
        jids = Cogworker.client.push_payloads(payloads)
        jobs.zip(jids).each { |job, jid| job.provider_job_id = jid }
        jids
      end

      # The one cogworker job class ActiveJob jobs run through: registered
      # like any Cogworker::Job, so the allow-list admits ActiveJob classes
      # through it, and only subclasses of ActiveJob::Base.
      class JobWrapper
        include Cogworker::Job

        def perform(job_data)
          job_class = job_data['job_class'].to_s
          klass = begin
            Object.const_get(job_class)
          rescue NameError
            nil
          end
          unless klass.is_a?(Class) && klass < ActiveJob::Base
            raise Cogworker::UnknownJobClass, "#{job_class.inspect} is not an ActiveJob class"
          end

          ActiveJob::Base.execute(job_data.merge('provider_job_id' => jid))
        end
      end
    end
  end
end
