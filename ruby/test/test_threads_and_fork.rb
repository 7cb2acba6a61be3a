# frozen_string_literal: true

require_relative 'test_helper'

class TestThreadsAndFork < Minitest::Test
  include CogworkerTest

  def test_thread_kill_of_a_thread_waiting_for_a_job_returns_promptly
    worker = Cogworker::Native::Worker.new(Cogworker.config.native, [], [], false)
    worker.start
    waiting = Thread.new { worker.run_slot(->(_) {}, ->(_, _) {}) }
    sleep 0.3
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    waiting.kill
    assert waiting.join(3), 'killed thread did not end'
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 1.0
    worker.stop
    assert worker.wait(10)
    # Any Float: infinity waits (here: returns at once, it has ended), NaN is named.
    assert worker.wait(Float::INFINITY)
    assert worker.wait(-1.0)
    error = assert_raises(Cogworker::InvalidArgument) { worker.wait(Float::NAN) }
    assert_match(/timeout/, error.message)
  end

  def test_a_forked_child_can_push_and_work
    EchoJob.perform_async('parent')
    pid = fork do
      runner = Cogworker::Runner.new(Cogworker.config).start
      EchoJob.perform_async('child')
      deadline = Time.now + 15
      sleep 0.02 until Jobs.seen.include?(['child']) || Time.now > deadline
      runner.stop
      runner.wait(15)
      exit!(Jobs.seen.include?(['child']) ? 0 : 1)
    end
    _, status = Process.wait2(pid)
    assert status.success?
    EchoJob.perform_async('parent again')
    assert_equal 2, Cogworker::Api.new.stats['processed']
    assert_equal 1, Cogworker::Api.new.queues.first['size']
  end
end
