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
    def register(cron, klass, args: [], queue: nil, unique: nil, tz: nil, retry: nil)
      class_name = klass.is_a?(Module) ? klass.name : klass.to_s
      queue ||= klass.cogworker_queue if klass.respond_to?(:cogworker_queue)
      retry_option = binding.local_variable_get(:retry)
      entry = { 'cron' => cron.to_s, 'class' => class_name, 'args' => Array(args), 'queue' => (queue || 'default').to_s }
      entry['unique'] = unique.to_s if unique
      entry['tz'] = tz.to_s if tz
      entry['retry'] = retry_option unless retry_option.nil? || retry_option == true
      pjid = Native.periodic_id(encode(entry))
      @lock.synchronize { @entries[pjid] = entry }
      pjid
    end

    def entries
      @lock.synchronize { @entries.values.map(&:dup) }
    end

    def clear
      @lock.synchronize { @entries.clear }
    end

    private

    def encode(entry)
      JSON.generate(entry)
    rescue JSON::GeneratorError, Encoding::UndefinedConversionError, ArgumentError => e
      raise ConfigError, "invalid config periodic.args = #{entry['args'].inspect}: must be JSON data: #{e.message}"
    end
  end
end
