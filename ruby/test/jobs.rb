# frozen_string_literal: true

# Handlers for the tests (loaded in-process and by worker processes).
module Jobs
  RESULTS = Queue.new
  @seen = []
  @lock = Mutex.new

  class << self
    def record(value)
      @lock.synchronize { @seen << value }
      path = ENV.fetch('TEST_RESULTS_FILE', nil)
      File.open(path, 'a') { |f| f.puts(value.inspect) } if path
    end

    def seen = @lock.synchronize { @seen.dup }
    def reset = @lock.synchronize { @seen.clear }
  end
end

if ENV['TEST_WORKER_PROCESS']
  Cogworker.configure do |c|
    c.orphan_threshold = Float(ENV.fetch('TEST_ORPHAN_THRESHOLD', '300'))
    c.orphan_check_interval = 0.5
    c.heartbeat_interval = 0.5
  end
end

class EchoJob
  include Cogworker::Job
  def perform(*args) = Jobs.record(args)
end

class CriticalJob
  include Cogworker::Job
  cogworker_options queue: 'critical'
  def perform(value) = Jobs.record([:critical, value])
end

class FlakyJob
  include Cogworker::Job
  cogworker_options retry: 2
  cogworker_retry_in { |_count, _error| 0.1 }
  class Flake < StandardError; end

  def perform(key)
    first = Jobs.seen.none? { |s| s == [:flaky, key] }
    Jobs.record([:flaky, key])
    raise Flake, "first attempt of #{key} fails" if first
  end
end

class AlwaysFailsJob
  include Cogworker::Job
  cogworker_options retry: 1
  cogworker_retry_in { |_count, _error| 0.1 }
  def perform = raise(ArgumentError, "always \xff fails".b)
end

class SleeperJob
  include Cogworker::Job
  def perform(seconds, tag)
    Jobs.record([:start, tag])
    sleep(seconds * Float(ENV.fetch('TEST_SLEEP_SCALE', '1')))
    Jobs.record([:slept, tag])
  end
end

# Sleeps with Thread#raise deferred (as a C extension holding the GVL
# would be): past its time limit it will not stop. Its retry hook puts a
# timed-out job an hour away.
class StubbornJob
  include Cogworker::Job
  cogworker_options timeout: 0.5
  cogworker_retry_in { |_count, error| error.is_a?(Cogworker::JobTimeout) ? 3600 : nil }
  def perform(tag)
    Jobs.record([:start, tag])
    Thread.handle_interrupt(Object => :never) { sleep 30 }
    Jobs.record([:slept, tag])
  end
end

class UniqueJob
  include Cogworker::Job
  cogworker_options unique_for: 60
  def perform(value) = Jobs.record([:unique, value])
end

# Logs through Cogworker.logger while it runs (the log tests).
class LoggingJob
  include Cogworker::Job
  def perform(word) = Cogworker.logger.info("logging #{word}")
end

class PutsJob
  include Cogworker::Job
  def perform(word) = puts("puts #{word}")
end

class DeclinedJob
  include Cogworker::Job
  cogworker_options retry: false
  def perform = raise(ArgumentError, 'card declined')
end
