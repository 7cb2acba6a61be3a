# frozen_string_literal: true

require 'logger'

module Cogworker
  # Runs jobs: `concurrency` Ruby threads take jobs from the engine (waiting
  # without the GVL) and call `perform` on the handler class. The engine
  # decides what happens to each job; this only reports how it ended.
  class Runner
    attr_reader :config

    def initialize(config = Cogworker.config)
      @config = config
      entries = config.periodic.entries
      classes = Cogworker.registry.keys | resolve_periodic_classes(entries)
      @native = Native::Worker.new(config.to_h, entries.map { |e| JSON.generate(e) }, classes)
      @threads = []
      @resolve_lock = Mutex.new
    end

    def identity = @native.identity
    def lifecycle = @native.lifecycle
    def quiet = @native.quiet
    def stop = @native.stop
    def busy = JSON.parse(@native.busy_json)

    # Resolves the registered handler classes here, on the calling (main)
    # thread, then starts the engine and the slot threads.
    def start
      @handlers = Cogworker.registry
      @native.start
      concurrency = @config.concurrency || 10
      @threads = Array.new(concurrency) do |i|
        Thread.new do
          Thread.current.name = "cogworker.processor-#{i}"
          slot
        end
      end
      Cogworker.logger.info("cogworker #{identity}: #{@handlers.size} handler(s): #{@handlers.keys.sort.join(', ')}")
      self
    end

    # True once the engine has shut down (waits up to `timeout` seconds).
    def wait(timeout) = @native.wait(timeout.to_f)

    # After `wait`: false if threads are still stuck in a handler (their jobs
    # were already put back on their queues).
    def join(timeout = 5)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      @threads.each { |t| t.join([deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC), 0].max) }
      @threads.none?(&:alive?)
    end

    def dump
      busy.each { |b| Cogworker.logger.warn("busy: #{b['class']} jid=#{b['jid']} queue=#{b['queue']}") }
      Thread.list.each do |t|
        name = t == Thread.main ? 'main' : (t.name || t.object_id)
        Cogworker.logger.warn("thread #{name}:\n#{(t.backtrace || []).join("\n")}")
      end
    end

    private

    def slot
      loop do
        delivery = @native.next_job(0.5)
        next if delivery.nil?
        break if delivery == :stopped

        perform(delivery)
      end
    end

    def perform(delivery)
      klass = resolve(delivery.class_name)
      klass.new.perform(*JSON.parse(delivery.args_json))
      @native.complete(delivery)
    rescue StandardError, ScriptError => e
      fail_job(delivery, klass, e)
    end

    def fail_job(delivery, klass, error)
      delay = klass.respond_to?(:cogworker_retry_delay) ? klass.cogworker_retry_delay(delivery.retry_count, error) : nil
      Cogworker.logger.warn(
        "#{delivery.class_name} jid=#{delivery.jid} failed: #{error.class}: #{error.message}\n" \
        "#{(error.backtrace || []).first(20).join("\n")}"
      )
      @native.fail(delivery, error.class.name.to_s, error.message.to_s, error.backtrace || [], delay&.to_f)
    rescue StandardError => e
      Cogworker.logger.error("could not record the failure of #{delivery.jid}: #{e.class}: #{e.message}")
    end

    def resolve(name)
      @handlers[name] || @resolve_lock.synchronize { Object.const_get(name) }
    end

    # Resolves every periodic entry's class here, on the booting thread,
    # before any slot thread exists (lazy loading raced on slot threads). A
    # class that can't be resolved is logged and the process boots: the
    # entry still ticks, for a worker (maybe in another language) that has it.
    def resolve_periodic_classes(entries)
      entries.map { |e| e['class'] }.uniq.filter_map do |name|
        Object.const_get(name)
        name
      rescue NameError, LoadError => e
        Cogworker.logger.warn("periodic job class #{name} can't be resolved here: #{e.message}")
        nil
      end
    end
  end

  class << self
    attr_writer :logger

    def logger
      @logger ||= Logger.new($stderr).tap do |l|
        $stderr.sync = true
        l.formatter = proc do |severity, time, _prog, msg|
          "#{time.utc.strftime('%Y-%m-%dT%H:%M:%S.%LZ')} #{severity.ljust(5)} pid=#{Process.pid} " \
            "[#{Thread.current.name || 'main'}] #{msg}\n"
        end
      end
    end
  end
end
