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

  # A slot thread that ends early (killed here) is replaced, as the
  # engine decides for both hosts: the worker keeps its concurrency and
  # goes on running jobs; none is started once it stops.
  def test_a_killed_slot_thread_is_replaced_and_jobs_still_run
    start_runner(concurrency: 1)
    slot = -> { Thread.list.find { |t| t.name == 'cogworker.processor-0' && t.alive? } }
    killed = wait_for('the slot thread') { slot.call }
    killed.kill
    assert killed.join(5), 'the killed slot thread did not end'
    replacement = wait_for('a slot thread in its place') { (t = slot.call) && t != killed && t }
    EchoJob.perform_async('after the kill')
    wait_for('the job run by the new slot') { Jobs.seen.include?(['after the kill']) }
    assert replacement.alive?
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
