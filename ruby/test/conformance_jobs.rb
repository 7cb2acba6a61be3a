# frozen_string_literal: true

# The conformance suite's job classes (tests/conformance/scenarios.json),
# required by its runner and by the worker processes it starts.
class ConformanceError < StandardError; end

module Conformance
  TRAIL = []
  HOOK_CALLS = []
  LOCK = Mutex.new

  def self.record(call) = LOCK.synchronize { HOOK_CALLS << call }
  def self.calls = LOCK.synchronize { HOOK_CALLS.dup }

  # Client middleware that changes the job, then raises.
  class StampThenRaise
    def call(_class_name, job, _queue, _redis_pool)
      job['stamped'] = true
      raise ConformanceError, 'client middleware failed'
    end
  end

  # Client middleware: stops a push whose args are ['stop'], stamps every
  # other with tenant 'acme'.
  class TenantStamp
    def call(_class_name, job, _queue, _redis_pool)
      return false if job['args'] == ['stop']

      job['tenant'] = 'acme'
      yield
    end
  end

  # Skips a job whose args are ['skip'], makes ['change', x] into
  # [x + '!'], and swallows a ConformanceError.
  class GateMiddleware
    def call(_instance, job, _queue)
      return nil if job['args'] == ['skip']

      job['args'] = ["#{job['args'][1]}!"] if job['args'].first == 'change'
      yield
    rescue ConformanceError
      nil
    end
  end

  # Appends '<name>:before' and '<name>:after' around the rest of the chain.
  class TrailMiddleware
    def initialize(name)
      @name = name
    end

    def call(_instance, _job, _queue)
      TRAIL << "#{@name}:before"
      yield.tap { TRAIL << "#{@name}:after" }
    end
  end
end

class ConformanceEcho
  include Cogworker::Job
  def perform(*args) = args
end

class ConformanceSlow
  include Cogworker::Job
  def perform(seconds) = sleep(seconds)
end

class ConformanceLong
  include Cogworker::Job

  def perform(mode)
    return steps if mode == 'steps'
    return wait_until_stopping if mode == 'until_stopping'

    if cursor.nil?
      progress(50, 'half', data: { 'step' => 1 })
      checkpoint({ 'at' => 1 })
      interrupt! if mode == 'interrupt'
      return nil
    end
    { 'cursor' => cursor, 'stopping' => stopping? }
  end

  def wait_until_stopping
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    sleep(0.01) until stopping? || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    Conformance::TRAIL << 'stopped'
    nil
  end

  def steps
    [25, 50, 75].each do |percent|
      progress(percent)
      sleep(0.2)
    end
    'stepped'
  end
end

class ConformanceIterate
  include Cogworker::IterableJob

  def build_enumerator(count, cursor:) = array_enumerator((0...count).to_a, cursor: cursor)
  def max_iteration_runtime = 0.1
  def on_start = Conformance::TRAIL << 'start'
  def on_resume = Conformance::TRAIL << 'resume'

  def each_iteration(item, _count)
    sleep(0.2)
    Conformance::TRAIL << "item:#{item}"
  end
end

class ConformanceBoom
  include Cogworker::Job
  cogworker_retry_in { |_count, _error| 3600 }
  def perform = raise(ConformanceError, 'boom')
end

class ConformanceTrail
  include Cogworker::Job
  def perform = Conformance::TRAIL << 'handler'
end

class ConformanceElsewhere
  include Cogworker::Job
  cogworker_options queue: 'elsewhere', priority: 7
  def perform(*args) = args
end

class ConformanceDeclared
  include Cogworker::Job
  cogworker_options queue: 'declared', retry: false
  def perform(*args) = args
end

class ConformanceInterrupt
  include Cogworker::Job
  cogworker_retry_in { |_count, _error| 3600 }
  def perform = raise(Interrupt) # what Ctrl-C raises
end

# Adds a ConformanceEcho of its args to its own batch.
class ConformanceGrow
  include Cogworker::Job
  def perform(*args) = Cogworker::Batch.new(bid: bid).jobs { ConformanceEcho.perform_async(*args) }
end

class ConformanceWhoAmI
  include Cogworker::Job
  def perform = [bid, !jid.to_s.empty?]
end

# Retry hooks answering in each way a hook may: a length of time in the
# language's own numbers (a Rational here; an ActiveSupport::Duration in
# Rails), text that is no number, and a raise.
class ConformanceRetryLong
  include Cogworker::Job
  cogworker_retry_in { |_count, _error| Rational(1000) }
  def perform = raise(ConformanceError, 'retried in a Rational')
end

class ConformanceRetryText
  include Cogworker::Job
  cogworker_retry_in { |_count, _error| 'soon' }
  def perform = raise(ConformanceError, 'retried in text')
end

class ConformanceRetryRaises
  include Cogworker::Job
  cogworker_retry_in { |_count, _error| 1 / 0 }
  def perform = raise(ConformanceError, 'the hook raises')
end
