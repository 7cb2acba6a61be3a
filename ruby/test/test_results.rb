# frozen_string_literal: true

require_relative 'test_helper'

class ResultsAddJob
  include Cogworker::Job
  cogworker_options result_ttl: 600
  def perform(a, b) = { 'sum' => a + b, 'big' => 2**70 }
end

class ResultsFailsJob
  include Cogworker::Job
  cogworker_options result_ttl: 600, retry: 0
  def perform = raise(ArgumentError, 'no luck')
end

class ResultsNotJsonJob
  include Cogworker::Job
  cogworker_options result_ttl: 600, retry: false
  def perform = Object.new
end

class ResultsFlakyJob
  include Cogworker::Job
  cogworker_options result_ttl: 600, retry: 2
  cogworker_retry_in { |_count, _error| 0 }

  def perform(key)
    Jobs.record(key)
    raise ArgumentError, 'first run fails' if Jobs.seen.count(key) == 1

    "#{key} on run #{Jobs.seen.count(key)}"
  end
end

# Job results (result_ttl): the value perform returned, JobFailed for a job
# that failed for good, Pending before, a value JSON cannot hold failing
# the job.
class TestResults < Minitest::Test
  include CogworkerTest

  def test_the_value_perform_returned
    jid = ResultsAddJob.perform_async(2, 3)
    assert_equal Cogworker::Pending.new(jid, 'queued'), Cogworker::Client.result(jid)
    assert_equal 'scheduled', Cogworker.client.status(ResultsAddJob.perform_in(3600, 1, 1))
    start_runner
    assert_equal({ 'sum' => 5, 'big' => 2**70 }, Cogworker::Client.result(jid, wait: 10))
    assert_equal 'succeeded', Cogworker.client.status(jid)
  end

  # Issue #45, item 11: status and cancel were instance methods only, while
  # push and result are class methods too, and the docs show both forms.
  def test_status_and_cancel_are_class_methods_as_push_and_result_are
    jid = ResultsAddJob.perform_in(3600, 1, 1)
    assert_equal 'scheduled', Cogworker::Client.status(jid)
    assert_equal 'scheduled', Cogworker::Client.cancel(jid)
    assert_equal 'cancelled', Cogworker::Client.status(jid)
  end

  def test_a_job_that_failed_for_good_raises_job_failed
    jid = ResultsFailsJob.perform_async
    start_runner
    error = assert_raises(Cogworker::JobFailed) { Cogworker::Client.result(jid, wait: 10) }
    assert_equal %w[dead ArgumentError no\ luck], [error.status, error.error_class, error.error_message]
    assert_kind_of Cogworker::Error, error
  end

  def test_a_value_json_cannot_hold_fails_the_job
    jid = ResultsNotJsonJob.perform_async
    start_runner
    error = assert_raises(Cogworker::JobFailed) { Cogworker::Client.result(jid, wait: 10) }
    assert_equal 'failed', error.status
    assert_match(/result/, error.error_message)
  end

  def test_the_result_of_a_job_that_succeeded_after_a_retry
    jid = ResultsFlakyJob.perform_async('k')
    start_runner
    assert_equal 'k on run 2', Cogworker::Client.result(jid, wait: 15)
    record = Cogworker::Api.new.result(jid)
    assert_equal 1, record['retry_count']
    assert_operator record['started_at'], :<=, record['finished_at']
  end
end
