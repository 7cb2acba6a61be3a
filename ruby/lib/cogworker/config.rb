# frozen_string_literal: true

module Cogworker
  # Settings (docs/configuration.md). Every setter validates through the engine at once and
  # raises ConfigError naming the setting and value.
  class Config
    SETTINGS = %i[
      redis_url namespace concurrency queues strict_queues fetch fetch_idle_max_interval
      orphan_threshold orphan_check_interval shutdown_timeout unique_lock_ttl periodic_catch_up
      labels heartbeat_interval scheduler_poll_interval
    ].freeze

    def initialize(settings = {})
      @settings = {}
      settings.each { |k, v| self[k] = v }
    end

    SETTINGS.each do |name|
      define_method(name) { @settings[name] }
      define_method(:"#{name}=") { |value| self[name] = value }
    end

    def [](name)
      @settings[name.to_sym]
    end

    def []=(name, value)
      candidate = @settings.merge(name.to_sym => normalize(value))
      Native.check_config(candidate)
      @settings = candidate
    end

    def to_h
      @settings.dup
    end

    # The periodic entries; with a block, yields the manager to register:
    #   c.periodic { |mgr| mgr.register('0 * * * *', 'Hourly') }
    def periodic
      @periodic ||= PeriodicManager.new
      yield @periodic if block_given?
      @periodic
    end
    alias periodic_manager periodic

    # Settings overridden; the periodic entries are shared.
    def merge(overrides)
      merged = Config.new(@settings.merge(overrides.compact))
      merged.instance_variable_set(:@periodic, periodic)
      merged
    end

    private

    # Symbols become strings, [name, weight] pairs "name,weight".
    def normalize(value)
      case value
      when Symbol then value.to_s
      when Array then value.map { |v| v.is_a?(Array) ? v.join(',') : normalize(v) }
      else value
      end
    end
  end
end
