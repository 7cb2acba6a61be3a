# frozen_string_literal: true

module Cogworker
  # What a death handler is given with the job (Sidekiq's shape): the
  # exception the job died of, of its own class when that class is loaded
  # here (`ex.is_a?(MyError)`, its message and backtrace as recorded; made
  # without calling its `initialize`), else a JobDied. Either answers
  # `jid`, `job`, `error_class` and `error_message`.
  class JobDied < Error
    # The recorded fields, on whichever exception a death handler gets.
    module Fields
      attr_reader :job, :jid, :error_class, :error_message

      def died_of(job)
        @job = job
        @jid = job['jid']
        @error_class = job['error_class']
        @error_message = job['error_message']
        self
      end
    end
    include Fields

    def initialize(job)
      died_of(job)
      super("#{@error_class}: #{@error_message}")
    end

    # The exception to hand a death handler for `job` (a filed payload).
    def self.for(job)
      klass = Object.const_get(job['error_class'].to_s) if job['error_class'].to_s.match?(/\A[A-Z][\w:]*\z/)
      return new(job) unless klass.is_a?(Class) && klass <= StandardError

      error = klass.allocate.exception(job['error_message'].to_s)
      error.set_backtrace(Array(job['error_backtrace']).map(&:to_s))
      error.extend(Fields).died_of(job)
    rescue StandardError
      new(job)
    end
  end

  # Server middleware, Sidekiq's shape: each entry is a class (and the
  # arguments to build it with), made anew for every job and called as
  # `call(job_instance, job_hash, queue) { yield }`. Not yielding skips the
  # job (it counts as done); rescuing what `yield` raises swallows the
  # failure; raising fails the job. Changing `job_hash['args']` changes
  # what `perform` is called with.
  class MiddlewareChain
    Entry = Struct.new(:klass, :args) do
      def make_new = klass.new(*args)
    end

    def initialize
      @entries = []
      @lock = Mutex.new
    end

    def add(klass, *args)
      @lock.synchronize do
        @entries = @entries.reject { |e| e.klass == klass } + [Entry.new(klass, args)]
      end
    end

    def prepend(klass, *args)
      @lock.synchronize do
        @entries = [Entry.new(klass, args)] + @entries.reject { |e| e.klass == klass }
      end
    end

    def remove(klass)
      @lock.synchronize { @entries = @entries.reject { |e| e.klass == klass } }
    end

    def clear = @lock.synchronize { @entries = [] }
    def exists?(klass) = @entries.any? { |e| e.klass == klass }
    def entries = @entries.map(&:klass)
    def empty? = @entries.empty?
    def size = @entries.size

    # Client middleware, Sidekiq's shape: `call(class_name, job_hash, queue,
    # redis_pool) { yield }` (redis_pool is nil: cogworker has none). The
    # push goes on if every middleware yielded; one that does not stops it.
    def invoke_client(class_name, job, queue)
      chain = @entries.map(&:make_new)
      call = lambda do |index|
        return true if index == chain.size

        pushed = false
        chain[index].call(class_name, job, queue, nil) { pushed = call.call(index + 1) }
        pushed
      end
      call.call(0)
    end

    # Runs the block (the job) inside every middleware, outermost first.
    def invoke(instance, job, queue, &run)
      chain = @entries.map(&:make_new)
      call = lambda do |index|
        return run.call if index == chain.size

        chain[index].call(instance, job, queue) { call.call(index + 1) }
      end
      call.call(0)
    end
  end

  # Where an application plugs into its workers: server and client middleware, error
  # handlers (`->(ex, ctx) {}` for every failure), death handlers
  # (`->(job, ex) {}` for every job filed in dead) and lifecycle hooks
  # (`on(:startup)`, `:quiet`, `:shutdown`, `:heartbeat`). All run in the
  # worker process; a hook that raises is logged and changes nothing.
  class Hooks
    EVENTS = Native::LIFECYCLE_EVENTS.map(&:to_sym).freeze # the core's list

    attr_reader :server_middleware, :client_middleware, :error_handlers, :death_handlers

    def initialize
      @server_middleware = MiddlewareChain.new
      @client_middleware = MiddlewareChain.new
      @error_handlers = []
      @death_handlers = []
      @events = EVENTS.to_h { |e| [e, []] }
    end

    def on(event, &hook)
      event = Native.lifecycle_event(event.to_s).to_sym # ConfigError naming the events there are
      raise ArgumentError, 'Cogworker: on(event) needs a block' unless hook

      @events[event] << hook
    end

    def report_error(error, context)
      @error_handlers.dup.each do |handler|
        safely('error', handler) { handler.arity == 3 ? handler.call(error, context, self) : handler.call(error, context) }
      end
    end

    # A periodic job the worker is about to push, through the client
    # middleware: the job, or nil to push nothing. What a middleware raises
    # goes to the engine, which pushes the job as it was.
    def periodic_push(job)
      @client_middleware.invoke_client(job['class'], job, job['queue']) ? job : nil
    end

    # Runs the hooks of one worker event (on the worker's events thread).
    def dispatch(name, job)
      if name == 'death'
        job ||= {}
        @death_handlers.dup.each { |handler| safely('death', handler) { handler.call(job, JobDied.for(job)) } }
      else
        @events.fetch(name.to_sym, []).dup.each { |hook| safely(name.to_s, hook) { hook.call } }
      end
    end

    private

    # Calls the block; what it raises is logged by the engine (`role`:
    # 'error', 'death' or the lifecycle event) and goes no further.
    def safely(role, hook)
      yield
    rescue Exception => e # rubocop:disable Lint/RescueException -- a hook never changes what happens to a job
      where = hook.respond_to?(:source_location) && hook.source_location ? hook.source_location.join(':') : hook.inspect
      Native.hook_raised(role, "at #{where}", e.class.name.to_s, e.message.to_s, Array(e.backtrace).map(&:to_s))
    end
  end
end
