# frozen_string_literal: true

module Cogworker
  # `queue_adapter = :cogworker` needs ActiveJob::QueueAdapters::CogworkerAdapter
  # defined by the time ActiveJob::Base loads (it looks the adapter up
  # then). Where ActiveJob is loaded already (Rails loads before the
  # Gemfile's gems), it is required at once; where only ActiveSupport is,
  # on ActiveJob's load hook. The worker CLI loads cogworker before the app
  # it boots, so there neither exists yet: while it requires the app it
  # watches for ActiveSupport's load hooks to appear (a TracePoint on class
  # definitions, off again once the app is loaded) and registers then.
  module ActiveJobHook
    ADAPTER = 'active_job/queue_adapters/cogworker_adapter'

    class << self
      # Registers now if it can; true once registered.
      def install
        return true if @installed

        if defined?(::ActiveJob)
          require ADAPTER
        elsif defined?(::ActiveSupport) && ::ActiveSupport.respond_to?(:on_load)
          ::ActiveSupport.on_load(:active_job) { require ADAPTER }
        else
          return false
        end
        @installed = true
      end

      # Runs the block (booting an app), registering as soon as
      # ActiveSupport has appeared; once the app is loaded, the adapter (and
      # with it the one handler ActiveJob jobs run through) is loaded
      # whenever ActiveJob is. The load hook alone is not enough: in
      # development (eager_load false) nothing loads ActiveJob::Base at
      # boot, so `on_load(:active_job)` never fires in a worker and every
      # ActiveJob job failed as an unknown handler.
      def while_booting
        if install
          yield
        else
          watch_for_active_support { yield }
        end
        require ADAPTER if defined?(::ActiveJob)
      end

      private

      def watch_for_active_support
        watcher = TracePoint.new(:class) { watcher.disable if install }
        watcher.enable
        begin
          yield
        ensure
          watcher.disable
        end
      end
    end
  end
end
