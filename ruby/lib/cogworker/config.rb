# frozen_string_literal: true

module Cogworker
  # Settings (docs/configuration.md). One accessor per setting of the
  # engine's table; every setter validates at once and raises ConfigError
  # naming the setting and the value; every reader gives the effective
  # value (the default when unset).
  class Config
    SETTINGS = Native.settings.map { |name, _help| name.to_sym }.freeze

    def initialize(settings = {})
      @settings = {}
      @native = Native::Config.new({})
      settings.each { |k, v| self[k] = v }
    end

    SETTINGS.each do |name|
      define_method(name) { self[name] }
      define_method(:"#{name}=") { |value| self[name] = value }
    end

    # A setter of no setting (`c.concurency = 5`) is the engine's
    # ConfigError listing the settings, as in Python, not a NoMethodError.
    def method_missing(name, *args)
      setter = name.to_s.end_with?('=') && args.size == 1
      setter ? self[name.to_s.delete_suffix('=')] = args.first : super
    end

    def respond_to_missing?(name, include_private = false) = super

    def [](name)
      @native.get(name.to_s)
    end

    def []=(name, value)
      @native.set(name.to_s, value) unless value.nil?
      @settings[name.to_sym] = value
      @built = nil
    end

    # The settings given explicitly.
    def to_h
      @settings.dup
    end

    # The engine's own config object (what Client, Api and Runner take):
    # one per configuration, built again after a setting changes.
    def native
      built[:config] ||= Native::Config.new(@settings)
    end

    # The configuration's one native client, and so one connection, shared
    # by every Client and Api made from it.
    def native_client
      built[:client] ||= Native::Client.new(native)
    end

    # The periodic entries; with a block, yields the manager to register:
    #   c.periodic { |mgr| mgr.register('0 * * * *', 'Hourly') }
    def periodic
      @periodic ||= PeriodicManager.new
      yield @periodic if block_given?
      @periodic
    end
    alias periodic_manager periodic

    # Middleware, error and death handlers, lifecycle hooks (Hooks).
    def hooks
      @hooks ||= Hooks.new
    end

    # c.server_middleware { |chain| chain.add Tracing, 'svc' }
    def server_middleware
      yield hooks.server_middleware if block_given?
      hooks.server_middleware
    end

    # c.client_middleware { |chain| chain.add TenantStamp }: every push
    def client_middleware
      yield hooks.client_middleware if block_given?
      hooks.client_middleware
    end

    # c.error_handlers << ->(ex, ctx) { Honeybadger.notify(ex, context: ctx) }
    def error_handlers = hooks.error_handlers

    # c.death_handlers << ->(job, ex) { Pager.alert(job['jid'], ex.message) }
    def death_handlers = hooks.death_handlers

    # c.on(:startup) { ... }: :startup, :quiet, :shutdown, :heartbeat.
    def on(event, &) = hooks.on(event, &)

    private def built = (@built ||= {})

    # Settings overridden; the periodic entries and the hooks are shared.
    def merge(overrides)
      merged = Config.new(@settings.merge(overrides.compact))
      merged.instance_variable_set(:@periodic, periodic)
      merged.instance_variable_set(:@hooks, hooks)
      merged
    end
  end
end
