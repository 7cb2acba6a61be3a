# frozen_string_literal: true

require_relative 'test_helper'

# Runs until its job is cancelled (or 30 s pass), saying how it ended.
class CancellableJob
  include Cogworker::Job
  cogworker_options result_ttl: 600

  SEEN = Queue.new # rubocop:disable Style/MutableConstant

  def perform
    SEEN << 'started'
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      return SEEN << 'stopped early' if cancelled?

      sleep 0.02
    end
    SEEN << 'finished'
  end
end

# Cancellation from Ruby (issue #30, part 5): a running job reads
# `cancelled?` and stops; it is filed as cancelled and never retried.
class TestCancel < Minitest::Test
  include CogworkerTest

  def test_a_running_job_sees_cancelled_and_is_filed_as_cancelled
    CancellableJob::SEEN.clear
    start_runner(concurrency: 2)
    client = Cogworker.client
    api = Cogworker::Api.new
    jid = CancellableJob.perform_async
    wait_for('it started') { CancellableJob::SEEN.size == 1 }
    assert_equal 'started', CancellableJob::SEEN.pop
    wait_for('it shows as busy') { !api.busy.empty? }
    asked = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_equal 'running', client.cancel(jid)
    wait_for('it stopped', timeout: 1) { CancellableJob::SEEN.size == 1 }
    assert_equal 'stopped early', CancellableJob::SEEN.pop
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - asked, :<, 1
    wait_for('filed by the worker') { api.result(jid)&.dig('error_message').to_s.include?('stopped') }
    assert_equal 'cancelled', client.status(jid)
    failed = assert_raises(Cogworker::JobFailed) { client.result(jid) }
    assert_equal 'cogworker::Cancelled', failed.error_class
    assert_equal 0, api.set_size('retry')
  end

  def test_outside_a_worker_a_job_is_not_cancelled
    refute CancellableJob.new.cancelled?
  end
end
