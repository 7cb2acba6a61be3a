# frozen_string_literal: true

require 'active_job'
require 'cogworker' unless defined?(Cogworker::Job)
require_relative 'cogworker_limits'

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
    # honoured: see `priority_level`; so is `limits_concurrency`, declared
    # as Solid Queue declares it: see cogworker_limits.rb.
    class CogworkerAdapter
      # ActiveJob's priority (lower runs first, as Solid Queue and Delayed
      # Job read it; nil or 0 the default) as a cogworker level (0 to 9,
      # higher first, 5 the default): one level per step from the default,
      # clamped (-1 is 6, -4 and below 9; 1 is 4, 5 and above 0).
      def self.priority_level(priority)
        return nil if priority.nil? || priority.to_i.zero?

        (5 - priority.to_i).clamp(0, 9)
      end

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

      # Rails >= 8.1 (ActiveJob::Continuation): should the job running on
      # this thread stop now? True once its worker is shutting down, it was
      # cancelled, or its time limit is near (the core's `stopping`);
      # a continuation then saves its progress and the job is enqueued
      # again, resuming there.
      def stopping?
        Thread.current[:cogworker_active_job]&.stopping? || false
      end

      # Rails >= 7.2: a job enqueued inside a transaction is pushed after
      # the commit, so a worker never reads rows that are not there yet.
      def enqueue_after_transaction_commit?
        true
      end

      private

      def push(jobs, at: nil)
        payloads = jobs.map do |job|
          payload = { 'class' => self.class.wrapper_name, 'wrapped' => job.class.name, 'queue' => job.queue_name,
                      'args' => [job.serialize] }
          payload['at'] = at.to_f if at
          level = self.class.priority_level(job.priority)
          payload['priority'] = level if level
          payload.merge(self.class.concurrency_fields(job), self.class.flow_fields(job))
        end
        jids = Cogworker.client.push_payloads(payloads)
        jobs.zip(jids).each { |job, jid| job.provider_job_id = jid }
        jids
      end

      MAIL_DELIVERIES = %w[deliver_now deliver_now!].freeze

      # The class Sidekiq's ActiveJob adapter pushes (up to 7.x; 8.0 on:
      # SIDEKIQ_8_WRAPPER): JobWrapper runs them too, so jobs in flight
      # survive a switch of adapters either way.
      SIDEKIQ_WRAPPER = 'ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper'
      SIDEKIQ_8_WRAPPER = 'Sidekiq::ActiveJob::Wrapper'

      class << self
        # The class a push names: Sidekiq's wrapper in the sidekiq layout
        # (docs/sidekiq.md), so Sidekiq processes run what this pushes.
        def wrapper_name
          config = Cogworker.config
          return JobWrapper.name unless config.layout == 'sidekiq'

          config.sidekiq_version >= 8 ? SIDEKIQ_8_WRAPPER : SIDEKIQ_WRAPPER
        end

        # Kept for apps written for an earlier release, which refused an
        # ActiveJob class defined outside the app until it was named here:
        # every ActiveJob class the app has loaded runs now.
        def allow_job_class(_name) = nil

        # May the wrapper run `job_data`? Anyone who can write to Redis
        # chooses it, so the guard stands where a job calls a method named in
        # its arguments: ActionMailer's delivery jobs call
        # `mailer.public_send(method, *args)` (with Kernel and system that
        # once ran a shell command), so a delivery runs only for one of the
        # app's mailers, one of its actions, and deliver_now. Any other
        # ActiveJob class the app has loaded (its own, a gem's, an
        # engine's) runs, as Sidekiq's adapter runs them.
        def runnable?(klass, job_data)
          return false unless klass.is_a?(Class) && klass < ActiveJob::Base
          return mail_delivery?(job_data['arguments']) if delivery_job?(klass)

          true
        end

        # The constant `name` names (a job or mailer class from a payload),
        # or nil: only a constant's name is looked up, never anything else.
        def constant(name)
          Object.const_get(name) if name.match?(/\A[A-Z][\w:]*\z/)
        rescue NameError
          nil
        end

        private

        # ActionMailer's delivery jobs, and an app's subclass of one
        # (`config.action_mailer.delivery_job`).
        def delivery_job?(klass)
          %w[MailDeliveryJob DeliveryJob Parameterized::DeliveryJob].any? do |name|
            defined?(::ActionMailer) && ::ActionMailer.const_defined?(name) && klass <= ::ActionMailer.const_get(name)
          end
        end

        def mail_delivery?(arguments)
          mailer_name, method, delivery = Array(arguments).first(3).map(&:to_s)
          mailer = constant(mailer_name)
          mailer.is_a?(Class) && defined?(::ActionMailer::Base) && mailer < ::ActionMailer::Base &&
            mailer.action_methods.include?(method) && MAIL_DELIVERIES.include?(delivery)
        end
      end

      # The one cogworker job class ActiveJob jobs run through: registered
      # like any Cogworker::Job, so the allow-list admits ActiveJob classes
      # through it, and only those CogworkerAdapter.runnable? admits.
      class JobWrapper
        include Cogworker::Job

        def perform(job_data)
          job_class = job_data['job_class'].to_s
          unless CogworkerAdapter.runnable?(CogworkerAdapter.constant(job_class), job_data)
            raise Cogworker::UnknownJobClass,
                  "#{job_class.inspect} is not an ActiveJob class this app has loaded, or is a mail delivery " \
                  "for none of the app's mailers and actions (see docs/frameworks.md, ActiveJob)"
          end

          # The adapter's `stopping?` reads this thread's running job.
          outer = Thread.current[:cogworker_active_job]
          Thread.current[:cogworker_active_job] = self
          begin
            ActiveJob::Base.execute(job_data.merge('provider_job_id' => jid))
          ensure
            Thread.current[:cogworker_active_job] = outer
          end
        end
      end
      Cogworker.register(JobWrapper, as: SIDEKIQ_WRAPPER)
      Cogworker.register(JobWrapper, as: SIDEKIQ_8_WRAPPER)
    end
  end
end
