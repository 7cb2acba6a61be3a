# frozen_string_literal: true

# `require 'cogworker/sidekiq'` (in a Gemfile: `gem 'cogworker', require:
# 'cogworker/sidekiq'`, in place of `gem 'sidekiq'`): Sidekiq's API over
# cogworker, so a Sidekiq app's job classes, pushes, middleware and
# tests run unchanged on cogworker workers (`bundle exec cogworker -r
# ./config/environment.rb`), on the same Redis and keys as a Sidekiq fleet
# (layout "sidekiq", docs/sidekiq.md). What it provides:
#
# - Sidekiq::Job (and Sidekiq::Worker): sidekiq_options, sidekiq_retry_in,
#   sidekiq_retries_exhausted, perform_async/perform_in/perform_at, set;
# - Sidekiq::Client.push / push_bulk (Sidekiq's item hashes);
# - Sidekiq.configure_server / configure_client: config.redis = { url: },
#   server and client middleware chains, error and death handlers,
#   lifecycle events, concurrency and queues;
# - Sidekiq::Testing (`require 'cogworker/sidekiq/testing'`): fake!,
#   inline!, disable!, Job.jobs / drain / clear, Sidekiq::Worker.clear_all
#   and drain_all.
#
# The real sidekiq gem must not be loaded in the same process.
require_relative '../cogworker'

if defined?(::Sidekiq) && !defined?(::Sidekiq::COGWORKER)
  raise LoadError, 'cogworker/sidekiq replaces the sidekiq gem, which is loaded already: use one of them per process'
end

module Sidekiq
  # This module is cogworker's, not the sidekiq gem's.
  COGWORKER = true
  # The Sidekiq API this provides (gems that compare versions read it).
  VERSION = '7.0.0'

  # Sidekiq's default options of a job class.
  DEFAULT_JOB_OPTIONS = { 'retry' => true, 'queue' => 'default' }.freeze

  # Pushes in Sidekiq's item shape.
  class Client
    def self.push(item) = new.push(item)
    def self.push_bulk(items) = new.push_bulk(items)

    # `{ 'class' => Klass or 'Name', 'args' => [...], 'queue', 'retry',
    # 'at', ... }`: the jid (nil when a client middleware stopped it).
    def push(item)
      Cogworker.client.push_payloads([payload(item, item_args(item), item['at'] || item[:at])]).first
    end

    # `'args' => [[...], [...]]` (and `'at'`, one time or one per job): the jids.
    def push_bulk(items)
      args_list = items['args'] || items[:args]
      raise ArgumentError, 'Sidekiq::Client.push_bulk needs args, an Array of Arrays' unless args_list.is_a?(Array)

      at = items['at'] || items[:at]
      payloads = args_list.each_with_index.map do |args, index|
        payload(items, Cogworker::Client.args_array(args, 'args'), at.is_a?(Array) ? at[index] : at)
      end
      Cogworker.client.push_payloads(payloads)
    end

    private

    def item_args(item) = Cogworker::Client.args_array(item['args'] || item[:args] || [], 'args')

    # The job as Sidekiq's client would write it: the class's options under
    # the item's, `at` as epoch seconds.
    def payload(item, args, at)
      item = item.to_h { |key, value| [key.to_s, value] }
      klass = item['class']
      declared = klass.respond_to?(:get_sidekiq_options) ? klass.get_sidekiq_options : DEFAULT_JOB_OPTIONS
      job = declared.merge(item.except('class', 'args', 'at', 'jid').compact)
      job['class'] = klass.is_a?(Module) ? klass.name : klass.to_s
      job['args'] = args
      job['jid'] = item['jid'] if item['jid']
      job['at'] = at.to_f if at
      job
    end
  end

  # Include in a class with `perform(*args)`: a Sidekiq job class, run by
  # cogworker workers.
  module Job
    def self.included(base)
      base.include(Cogworker::Job)
      base.extend(ClassMethods)
      Sidekiq.job_classes << base
    end

    # Sidekiq's class methods.
    module ClassMethods
      # `sidekiq_options queue: 'critical', retry: 5, backtrace: true,
      # dead: false, ...`: every push's fields unless it gives its own.
      def sidekiq_options(options = {})
        @sidekiq_options = get_sidekiq_options.merge(options.to_h { |key, value| [key.to_s, value] })
      end

      def get_sidekiq_options # rubocop:disable Naming/AccessorMethodName -- Sidekiq's name
        inherited = superclass.respond_to?(:get_sidekiq_options) ? superclass.get_sidekiq_options : DEFAULT_JOB_OPTIONS
        defined?(@sidekiq_options) && @sidekiq_options ? inherited.merge(@sidekiq_options) : inherited
      end

      # `sidekiq_retry_in { |count, exception| seconds }`: count is 0 on the
      # first failure, as in Sidekiq; nil keeps the default backoff.
      def sidekiq_retry_in(&) = cogworker_retry_in(&)

      # `sidekiq_retries_exhausted { |job, exception| ... }`: called once
      # the job is out of retries and filed in dead.
      def sidekiq_retries_exhausted(&block)
        @sidekiq_retries_exhausted = block
      end

      def sidekiq_retries_exhausted_block = (defined?(@sidekiq_retries_exhausted) ? @sidekiq_retries_exhausted : nil)

      def perform_async(*args) = set({}).perform_async(*args)

      # Sidekiq's perform_in: seconds from now, or a Time.
      def perform_in(interval, *args) = set({}).perform_in(interval, *args)
      alias perform_at perform_in

      # `HardJob.set(queue: 'low').perform_async(1)`.
      def set(options) = Setter.new(self, options)

      # `HardJob.client_push('args' => [1], 'queue' => 'low')`.
      def client_push(item) = Client.push(item.merge('class' => self))
    end

    # A job class with per-push options.
    class Setter
      def initialize(klass, options)
        @klass = klass
        @options = options.to_h { |key, value| [key.to_s, value] }
      end

      def perform_async(*args) = Client.push(@options.merge('class' => @klass, 'args' => args))

      def perform_in(interval, *args)
        at = interval.is_a?(Time) ? interval.to_f : Time.now.to_f + interval.to_f
        Client.push(@options.merge('class' => @klass, 'args' => args, 'at' => at))
      end
      alias perform_at perform_in
    end
  end
  Worker = Job

  # What `configure_server` and `configure_client` yield: Sidekiq's
  # configuration calls, made on Cogworker.config.
  class Config
    def redis=(options)
      options = options.to_h { |key, value| [key.to_sym, value] }
      if options[:namespace]
        raise Cogworker::ConfigError, 'redis: namespace (redis-namespace) is not supported: Sidekiq 7 dropped it too'
      end

      Cogworker.config.redis_url = options[:url] if options[:url]
    end

    def server_middleware(&) = Cogworker.config.server_middleware(&)
    def client_middleware(&) = Cogworker.config.client_middleware(&)
    def error_handlers = Cogworker.config.error_handlers
    def death_handlers = Cogworker.config.death_handlers
    def on(event, &) = Cogworker.config.on(event, &)
    def concurrency=(count)
      Cogworker.config.concurrency = count
    end

    def queues=(names)
      Cogworker.config.queues = names
    end

    # `config[:concurrency] = 5`, Sidekiq 6's options hash.
    def []=(name, value)
      public_send(:"#{name}=", value)
    end

    def logger = Cogworker.logger
  end

  class << self
    # The job classes defined with Sidekiq::Job.
    def job_classes = (@job_classes ||= [])

    # Is this process a worker (the cogworker command runs it)?
    def server? = Cogworker.server?

    def configure_server
      yield Config.new if server?
    end

    def configure_client
      yield Config.new unless server?
    end

    def logger = Cogworker.logger

    # Sidekiq.redis { |conn| } hands out a redis-rb connection; cogworker
    # has none to give.
    def redis
      raise NotImplementedError, 'Sidekiq.redis is not provided by cogworker/sidekiq: use Cogworker::Api ' \
                                 '(queues, sets, processes, stats) or a Redis client of your own'
    end

    # Every job class's dead jobs reach its sidekiq_retries_exhausted.
    def retries_exhausted(job, error)
      klass = job_classes.find { |k| k.name == job['class'] }
      klass&.sidekiq_retries_exhausted_block&.call(job, error)
    end
  end
end

Cogworker.config.layout = 'sidekiq'
Cogworker.config.death_handlers << Sidekiq.method(:retries_exhausted)
