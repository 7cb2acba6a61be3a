# frozen_string_literal: true

# Job classes that end in every wrong way a job can (loaded by the tests and
# by worker processes).
module Escapes
  SLOTS = 4
  Point = Struct.new(:x)
  @together = Queue.new
  class << self
    attr_reader :together
  end

  class BadMessage < StandardError
    def message = raise('#message itself fails')
  end
end

# A class with #perform that nobody registered: a payload naming it must
# never run it.
class NotAJob
  def perform(*) = Jobs.record(:not_a_job_ran)
end

class RaisesException
  include Cogworker::Job
  cogworker_options retry: 1
  def perform = raise(Exception, 'not a StandardError')
end

class RaisesNoMemory
  include Cogworker::Job
  cogworker_options retry: 1
  def perform = raise(NoMemoryError, 'out of memory (pretend)')
end

class OverflowsStack
  include Cogworker::Job
  cogworker_options retry: 1
  def perform(depth = 0) = perform(depth + 1)
end

class RaisesBadMessage
  include Cogworker::Job
  cogworker_options retry: 1
  def perform = raise(Escapes::BadMessage)
end

class RetryHookRaises
  include Cogworker::Job
  cogworker_options retry: 1
  cogworker_retry_in { |_count, _error| raise 'the hook fails' }
  def perform = raise(ArgumentError, 'fails')
end

class RetryHookSymbol
  include Cogworker::Job
  cogworker_options retry: 1
  cogworker_retry_in { |_count, _error| :soon }
  def perform = raise(ArgumentError, 'fails')
end

class Latin1Message
  include Cogworker::Job
  cogworker_options retry: 1
  def perform = raise(ArgumentError, "caf\xE9".dup.force_encoding(Encoding::ISO_8859_1))
end

class KilledMidJob
  include Cogworker::Job
  cogworker_options retry: 1
  def perform
    Jobs.record(:about_to_be_killed)
    Thread.current.kill
  end
end

class AllAtOnce
  include Cogworker::Job
  def perform(n)
    Escapes.together << n
    deadline = Time.now + 20
    sleep 0.01 until Escapes.together.size >= Escapes::SLOTS || Time.now > deadline
    Jobs.record([:together, n])
  end
end

class ExitsJob
  include Cogworker::Job
  cogworker_options retry: 1
  def perform(code) = exit(code)
end
