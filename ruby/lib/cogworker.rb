# frozen_string_literal: true

require 'json'
require_relative 'cogworker/version'
require_relative 'cogworker/errors'
module Cogworker
  # The platform gem carries an extension per Ruby minor version under
  # cogworker/<major.minor>/; the source gem (and scripts/test) builds one
  # for this Ruby as cogworker/cogworker_ext. A Ruby the platform gem has no
  # extension for is told which it has and what to install instead.
  def self.require_extension
    abi = RUBY_VERSION[/\A\d+\.\d+/]
    require "cogworker/#{abi}/cogworker_ext"
  rescue LoadError
    begin
      require 'cogworker/cogworker_ext'
    rescue LoadError
      carried = Dir[File.join(__dir__, 'cogworker', '*', 'cogworker_ext.so')].map { |f| File.basename(File.dirname(f)) }
      raise if carried.empty?

      raise LoadError, "cogworker: this platform gem has the extension for Ruby #{carried.sort.join(' and ')}, " \
                       "not for Ruby #{abi}: install the source gem, which builds it with cargo " \
                       '(gem install cogworker --platform ruby)'
    end
  end
  private_class_method :require_extension
end
Cogworker.send(:require_extension)
# An extension of another version (a stale build on the load path) speaks
# another protocol: refused here, saying what to do.
Cogworker::Native.check_version(Cogworker::VERSION, $LOADED_FEATURES.grep(/cogworker_ext/).last.to_s)
require_relative 'cogworker/periodic'
require_relative 'cogworker/hooks'
require_relative 'cogworker/config'
require_relative 'cogworker/tracing'
require_relative 'cogworker/client'
require_relative 'cogworker/limiter'
require_relative 'cogworker/job'
require_relative 'cogworker/iterable_job'
require_relative 'cogworker/testing/modes'
require_relative 'cogworker/testing/redis_server'
require_relative 'cogworker/api'
require_relative 'cogworker/batch'
require_relative 'cogworker/workflow'
require_relative 'cogworker/log_forwarding'
require_relative 'cogworker/runner'

# Background jobs on Redis that are never lost. See README.
module Cogworker
  @registry = {}
  @registry_lock = Mutex.new

  class << self
    # Cogworker.configure { |c| c.redis_url = '...'; c.concurrency = 5 }
    # Settings that do not fit together raise ConfigError at the end.
    def configure
      yield config
      config.native # checks the settings as a whole
      @client = nil
      config
    end

    def config
      @config ||= Config.new
    end

    def client
      @client ||= Client.new(config)
    end

    # Forget every setting (tests).
    def reset!
      @config = nil
      @client = nil
    end

    # A job class (one that includes Cogworker::Job): the only classes a
    # worker runs, by name (`as:` another name it also answers to).
    def register(klass, as: klass.name)
      @registry_lock.synchronize { @registry[as] = klass if as }
    end

    # Is this process the `cogworker` command's worker (set before the app
    # loads, so the app can tell: Sidekiq.configure_server)?
    def server? = @server || false
    attr_writer :server

    def registry
      @registry_lock.synchronize { @registry.dup }
    end
  end

  # A forked child (Puma/Unicorn preloading) builds its own runtime and
  # connections; the parent's are never touched there.
  module ForkHook
    def _fork
      pid = super
      Cogworker::Native.after_fork_in_child if pid.zero?
      pid
    end
  end
  Process.singleton_class.prepend(ForkHook) if Process.respond_to?(:_fork)
end

# `queue_adapter = :cogworker` where ActiveJob or ActiveSupport is loaded
# already (see ActiveJobHook; else `require 'cogworker/active_job'`).
require_relative 'cogworker/active_job_hook'
Cogworker::ActiveJobHook.install
