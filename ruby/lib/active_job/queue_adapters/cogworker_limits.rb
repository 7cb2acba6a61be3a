# frozen_string_literal: true

module ActiveJob
  module QueueAdapters
    class CogworkerAdapter
      # Concurrency limits declared as Solid Queue declares them, so an
      # app moving from Solid Queue keeps its declarations:
      #
      #   class SyncAccountJob < ApplicationJob
      #     limits_concurrency to: 2, key: ->(account) { account }
      #   end
      #
      # at most `to` jobs of one key run at once across the fleet; the
      # others wait without holding a worker (a fair group of the queue
      # with that cap: docs/fairness.md). `key` is a Proc of the job's
      # arguments (run on the job, as Solid Queue runs it), a Symbol naming
      # a method of the job, or a value; a record stands as its GlobalID.
      # `group` (default: the class's name) lets classes share keys.
      # `duration` is accepted and not needed: a key's places are held by
      # running jobs and freed when they end, or when a killed worker's jobs
      # are recovered. Where Solid Queue (or another gem) defined
      # `limits_concurrency` first, its declarations are read the same way.
      module ConcurrencyLimits
        extend ActiveSupport::Concern

        included do
          class_attribute :concurrency_key, instance_accessor: false
          class_attribute :concurrency_limit, instance_accessor: false
          class_attribute :concurrency_group, instance_accessor: false
          class_attribute :concurrency_duration, instance_accessor: false
        end

        class_methods do
          def limits_concurrency(key:, to: 1, group: name, duration: nil)
            self.concurrency_key = key
            self.concurrency_limit = to
            self.concurrency_group = group
            self.concurrency_duration = duration
          end
        end
      end

      # Flow control by key (docs/flow-control.md) for an ActiveJob class:
      #
      #   class ReindexJob < ApplicationJob
      #     cogworker_flow key: ->(doc) { doc }, debounce: 5
      #   end
      #
      # `key` as limits_concurrency takes it (a Proc of the arguments, a
      # Symbol, a value; a record as its GlobalID), scoped to the class
      # (`<class>/<key>`: every ActiveJob job travels as one wrapper class);
      # the policy and its options as any cogworker job takes them
      # (debounce, debounce_max, throttle, throttle_excess, replace,
      # sequence), checked by the core at each perform_later.
      module FlowControl
        extend ActiveSupport::Concern

        included do
          class_attribute :cogworker_flow_options, instance_accessor: false
        end

        class_methods do
          def cogworker_flow(key:, **policy)
            self.cogworker_flow_options = policy.merge(key: key)
          end
        end
      end

      # The group and cap `job`'s class declares for it ({} without a
      # limit): its group is `<group>/<key>`, as Solid Queue names it.
      def self.concurrency_fields(job)
        klass = job.class
        return {} unless klass.respond_to?(:concurrency_limit) && klass.concurrency_limit && klass.concurrency_key

        value = key_of(job, klass.concurrency_key)
        { 'group' => "#{klass.concurrency_group || klass.name}/#{value}", 'group_cap' => klass.concurrency_limit }
      end

      # The flow key and policy `job`'s class declares ({} without one).
      def self.flow_fields(job)
        options = job.class.respond_to?(:cogworker_flow_options) && job.class.cogworker_flow_options
        return {} unless options

        fields = options.except(:key).transform_keys(&:to_s)
        fields.merge('key' => "#{job.class.name}/#{key_of(job, options[:key])}")
      end

      # A key declared as limits_concurrency takes it, for `job`.
      def self.key_of(job, key)
        value = case key
                when Proc then job.instance_exec(*job.arguments, &key)
                when Symbol then job.send(key)
                else key
                end
        value.respond_to?(:to_global_id) ? value.to_global_id.to_s : value
      end
    end
  end
end

ActiveJob::Base.include(ActiveJob::QueueAdapters::CogworkerAdapter::ConcurrencyLimits) unless
  ActiveJob::Base.respond_to?(:limits_concurrency)
ActiveJob::Base.include(ActiveJob::QueueAdapters::CogworkerAdapter::FlowControl)
