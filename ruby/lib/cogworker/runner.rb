# frozen_string_literal: true

require 'logger'
require_relative 'core_logger'

module Cogworker
  # Runs jobs: `concurrency` Ruby threads take deliveries from the engine
  # (waiting without the GVL) and call `perform` on the handler class. Only
  # the classes registered here (those that include Cogworker::Job, and the
  # periodic entries' classes resolved at boot) are ever run: the engine
  # fails a job of any other class as `cogworker::UnknownHandler`.
  #
  # However `perform` ends, its delivery is settled exactly once: success;
  # failure (any Exception; `exit` is recorded as the job's failure and
  # starts a graceful stop); or, if the thread is killed (Thread#kill, the
  # process exiting), abandoned to the engine, which files the job as
  # `cogworker::HandlerAborted` or leaves it for shutdown's requeue.
  class Runner
    attr_reader :config

    def initialize(config = Cogworker.config)
      @config = config
      entries = config.periodic.entries
      @handlers = Cogworker.registry.merge(resolve_periodic_classes(entries))
      @hooks = config.hooks
      # Periodic jobs this worker pushes go through the app's client
      # middleware too (registered by the time the worker is built).
      @native = Native::Worker.new(config.native, @handlers.keys, config.periodic.native_entries,
                                   !@hooks.client_middleware.empty?)
      @threads = []
      @threads_lock = Mutex.new
    end

    def identity = @native.identity
    def lifecycle = @native.lifecycle
    def quiet = @native.quiet
    def stop = @native.stop
    # After `wait`: how many jobs were still running when the shutdown
    # timeout ran out and went back to their queues. What their handlers
    # return is no longer recorded; a process that exits now keeps them
    # from finishing here as well as in the next worker.
    def given_back = @native.given_back
    def busy = @native.busy

    # Starts the engine and the slot threads.
    def start
      # The engine logs each job's start, end and failure: in the CLI's
      # format where it chose one; embedded, through Cogworker.logger.
      LogForwarding.start
      @native.start
      @config.concurrency.times { |i| start_slot(i) }
      # The application's hooks run on an events thread; the periodic
      # ticker's requests to the client middleware on one apart, never
      # behind an app's hook.
      { 'events' => [:run_hooks, :dispatch],
        'client_middleware' => [:run_client_middleware, :periodic_push] }.each do |role, (run, hook)|
        Thread.new { @native.public_send(run, @hooks.method(hook)) }.name = Native::THREAD_NAMES.fetch(role)
      end
      # Raises JobTimeout in a slot whose job's time limit passed (in a
      # child of -p N, first asking the class's retry hook of a timeout: a
      # handler that will not stop is filed without this process's Ruby).
      timed_out = lambda do |class_name, retry_count|
        retry_delay(retry_count, @handlers[class_name], JobTimeout.new(Native::TIME_LIMIT_PASSED))
      end
      Thread.new { @native.run_timekeeper(timed_out) }.name = Native::THREAD_NAMES.fetch('timekeeper')

      self
    end

    # True once the engine has shut down (waits up to `timeout` seconds).
    def wait(timeout) = @native.wait(timeout.to_f)

    # After `wait`: false if threads are still stuck in a handler (their jobs
    # were already put back on their queues). One deadline for all threads;
    # `slots: false` waits only for the events threads (the slots run
    # handlers whose jobs were given back).
    def join(timeout = 5, slots: true) = @native.join(timeout.to_f, slots)

    # TTIN: the busy jobs (the engine logs them) and every thread's stack.
    def dump
      @native.log_busy
      log_stacks
    end

    # A signal the worker command caught, by name: what it does (TERM and
    # INT stop, TSTP quiets, TTIN dumps) is the engine's decision.
    def signal(name)
      log_stacks if @native.signal(name)
    end

    # After `wait`: joins the threads the engine says to join (not the
    # slots when jobs were given back); true when the process must exit now
    # (`exit!`), a thread being stuck in a handler or a given-back job's
    # handler running on.
    def exit_at_once?(timeout = 5)
      @native.exit_at_once(join(timeout, slots: @native.join_slots))
    end

    private

    def log_stacks
      Native::Worker.log_thread_stacks(Thread.list.map do |t|
        [t.name || t.object_id.to_s, t == Thread.main, (t.backtrace || []).join("\n")]
      end)
    end

    # A slot thread: runs jobs (the engine's slot loop calls `perform` and
    # settles each) until the worker stops. One that ends before (Thread#kill,
    # a crash) is replaced when the engine says so (Python's are too).
    def start_slot(index)
      thread = Thread.new do
        Thread.current.name = Native.slot_thread_name(index)
        @native.run_slot(method(:perform), method(:describe))
        stopped = true
      ensure
        replace_slot(index) unless stopped
      end
      @threads_lock.synchronize { @threads << thread }
    end

    def replace_slot(index)
      return unless @native.slot_ended_early(Thread.current.name.to_s)

      @threads_lock.synchronize { @threads.delete(Thread.current) }
      start_slot(index)
    rescue ThreadError
      nil # the process is exiting: no new threads
    end

    # What a job may raise that stops its worker.
    STOPS_WORKER = [SystemExit, Interrupt].freeze

    # Runs the delivery's job (through the server middleware, in a CONSUMER
    # span when tracing records); returns what `perform` returned. The
    # engine settles it.
    def perform(delivery)
      class_name, jid, queue, _, args = delivery.info
      instance = @handlers.fetch(class_name).new
      instance.jid = jid if instance.respond_to?(:jid=)
      instance.cogworker_delivery = delivery if instance.respond_to?(:cogworker_delivery=)
      Thread.current[:cogworker_job] = { jid: jid, class: class_name }
      return instance.perform(*args) if @hooks.server_middleware.empty? && !Tracing.recording?

      job = delivery.payload
      Tracing.consuming(delivery) do
        @hooks.server_middleware.invoke(instance, job, queue) { instance.perform(*job['args']) }
      end
    ensure
      Thread.current[:cogworker_job] = nil
    end

    # What the engine records of a failure, after the error handlers ran:
    # `[error_class, message, backtrace, retry_in, stops_worker]`: what ends
    # a Ruby process (`exit`, and Ctrl-C's Interrupt) stops the worker
    # gracefully, as SystemExit and KeyboardInterrupt do in Python (a
    # scenario pins both). The engine logs it once.
    def describe(delivery, error)
      class_name, _, queue, retry_count = delivery.info
      unless @hooks.error_handlers.empty?
        job = safe { delivery.payload }
        @hooks.report_error(error, { context: 'Job raised exception', job: job, jid: job&.dig('jid'), queue: queue })
      end
      backtrace = safe { app_backtrace(error) } || []
      [safe { error.class.name }, safe { utf8(error.message) }, backtrace,
       retry_delay(retry_count, @handlers[class_name], error), STOPS_WORKER.any? { |stop| error.is_a?(stop) }]
    end

    # The gem's own frames (this directory: the slot, middleware chain,
    # tracing), which say nothing about a failure.
    OWN_FRAMES = "#{__dir__}/".freeze

    # The backtrace of `error` without the gem's own frames (Python's
    # worker drops its package's alike); all of them when nothing else is
    # left.
    def app_backtrace(error)
      lines = (error.backtrace || []).map { |line| utf8(line) }
      app = lines.reject { |line| line.start_with?(OWN_FRAMES) }
      app.empty? ? lines : app
    end

    # What the class's retry hook says, for the engine to read: what it
    # returned (seconds, a Duration, nil for the default backoff), or the
    # exception it raised.
    def retry_delay(retry_count, klass, error)
      klass.respond_to?(:cogworker_retry_delay) ? klass.cogworker_retry_delay(retry_count, error) : nil
    rescue Exception => e # rubocop:disable Lint/RescueException -- a broken hook must not lose the failure
      e
    end

    # `yield`, or nil if it raises (an exception's `#message` may).
    def safe
      yield
    rescue Exception # rubocop:disable Lint/RescueException
      nil
    end

    # Text in its own encoding transcoded to UTF-8 (Latin-1, Shift-JIS, ...);
    # bytes that are not text in it replaced.
    def utf8(text)
      text = text.to_s
      return text if text.encoding == Encoding::UTF_8 && text.valid_encoding?

      text.encode(Encoding::UTF_8, invalid: :replace, undef: :replace)
    end

    # Resolves every periodic entry's class here, on the booting thread,
    # before any slot thread exists (lazy loading raced on slot threads). A
    # class that can't be resolved is logged and the process boots: the
    # entry still ticks, for a worker (maybe in another language) that has it.
    def resolve_periodic_classes(entries)
      entries.map { |e| e['class'] }.uniq.each_with_object({}) do |name, found|
        found[name] = Object.const_get(name)
      rescue NameError, LoadError => e
        # The first line: Ruby's error_highlight adds a code snippet after it.
        Cogworker.logger.warn("periodic job class #{name} can't be resolved here: #{e.message.lines.first.to_s.strip}")
      end
    end
  end

  class << self
    attr_writer :logger

    # Writes through the engine, in its format (see CoreLogger); set your
    # own Logger to write elsewhere.
    def logger
      @logger ||= CoreLogger.new
    end
  end
end
