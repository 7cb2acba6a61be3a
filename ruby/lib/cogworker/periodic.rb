# frozen_string_literal: true

module Cogworker
  # Periodic (cron) entries, registered in the configuration:
  #
  #   Cogworker.configure do |c|
  #     c.periodic do |mgr|
  #       mgr.register('*/5 * * * *', 'Reports::Digest', args: ['daily'], unique: :until_executed)
  #     end
  #   end
  #
  # Every worker process that registered an entry ticks for it; each slot
  # runs once across the fleet (no leader). Cron: 5 fields, or 6 with seconds
  # first; `tz:` an IANA zone name (UTC by default).
  class PeriodicManager
    def initialize
      @entries = {}
      @lock = Mutex.new
    end

    # Registers an entry (`klass` a class or its name, in any language);
    # returns its id. Raises ConfigError naming what is wrong.
    # The core takes the class's declared queue and retry where not given.
    def register(cron, klass, args: [], queue: nil, unique: nil, tz: nil, retry: nil)
      class_name, declared = Job.handler_and_options(klass, {})
      options = { 'args' => Array(args), 'queue' => queue&.to_s, 'unique' => unique&.to_s, 'tz' => tz&.to_s,
                  'retry' => binding.local_variable_get(:retry) }
      entry = Native::Periodic.new(cron.to_s, class_name, options, declared)
      @lock.synchronize { @entries[entry.pjid] = entry }
      entry.pjid
    end

    # The entries as registered ('cron', 'class', 'args', 'queue', ...).
    def entries
      @lock.synchronize { @entries.values.map(&:entry) }
    end

    # The entries, for a worker.
    def native_entries
      @lock.synchronize { @entries.values }
    end

    def clear
      @lock.synchronize { @entries.clear }
    end
  end
end
