# frozen_string_literal: true

require_relative 'test_helper'

# Sleeps in Ruby until told its time limit passed (sleep is interrupted
# by Thread#raise), saying how it ended.
class TimeLimitedJob
  include Cogworker::Job
  cogworker_options timeout: 0.5

  SEEN = Queue.new # rubocop:disable Style/MutableConstant

  def perform(tag)
    SEEN << "started #{tag}"
    sleep 30
    SEEN << "finished #{tag}"
  rescue Cogworker::JobTimeout
    SEEN << "told #{tag}"
    raise
  end
end

# Returns at once, with its value kept.
class QuickTimedJob
  include Cogworker::Job
  cogworker_options result_ttl: 60, timeout: 5

  def perform(value) = value
end

# Time limits from Ruby (issue #30, part 4): a handler past its `timeout`
# gets Cogworker::JobTimeout raised in its thread; the job fails as
# cogworker::Timeout and is retried by its policy, and the slot goes on.
class TestTimeLimit < Minitest::Test
  include CogworkerTest

  def test_a_handler_past_its_limit_is_interrupted_and_retried_as_timed_out
    TimeLimitedJob::SEEN.clear
    start_runner(concurrency: 1)
    api = Cogworker::Api.new
    began = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    jid = TimeLimitedJob.perform_async('a')
    entry = wait_for('in retry') { api.find('retry', jid) }
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - began, :<, 3
    job = entry['job']
    assert_equal ['cogworker::Timeout', 'ran past its time limit of 0.5s'], job.values_at('error_class', 'error_message')
    assert(job['error_backtrace'].any? { |line| line.include?('test_time_limit.rb') }, job['error_backtrace'].inspect)
    assert_equal ['started a', 'told a'], [TimeLimitedJob::SEEN.pop, TimeLimitedJob::SEEN.pop]
    # The same slot goes on; a job within its limit is untouched.
    assert_equal 7, Cogworker.client.result(QuickTimedJob.perform_async(7), wait: 5)
    assert_empty TimeLimitedJob::SEEN
  end

  def test_a_bad_limit_is_named
    error = assert_raises(Cogworker::InvalidJob) { TimeLimitedJob.set(timeout: -1).perform_async('b') }
    assert_match(/timeout/, error.message)
  end
end
