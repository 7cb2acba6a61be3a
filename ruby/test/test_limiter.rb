# frozen_string_literal: true

require_relative 'test_helper'

# Counts the bodies of its jobs running at once.
class LimitedJob
  include Cogworker::Job
  cogworker_options limits: ['rb-one']

  LOCK = Mutex.new
  STATE = { now: 0, most: 0, ran: 0 } # rubocop:disable Style/MutableConstant

  def perform(seconds)
    LOCK.synchronize { STATE[:most] = [STATE[:most], STATE[:now] += 1].max }
    sleep seconds
    LOCK.synchronize do
      STATE[:now] -= 1
      STATE[:ran] += 1
    end
  end
end

# Rate limiters from Ruby (issue #30, part 1): defined here, checked and
# written by the engine, taken with within_limit and by the limits a job
# declares, shared with every other process and language.
class TestLimiter < Minitest::Test
  include CogworkerTest

  def test_a_concurrent_limit_holds_across_threads_and_frees_when_the_block_ends
    erp = Cogworker::Limiter.concurrent('rb-erp', 2)
    lock = Mutex.new
    running = most = 0
    threads = Array.new(6) do
      Thread.new do
        erp.within_limit do
          lock.synchronize { most = [most, running += 1].max }
          sleep 0.1
          lock.synchronize { running -= 1 }
        end
      end
    end
    threads.each { |t| t.join(10) }
    assert_equal 2, most
    assert_equal [0], Cogworker::Api.new.limiters.select { |l| l['name'] == 'rb-erp' }.map { |l| l['in_use'] }
  end

  def test_over_the_limit_after_its_wait_raises_over_limit_naming_it
    one = Cogworker::Limiter.concurrent('rb-single', 1, wait: 0.1)
    lease = one.acquire
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    error = assert_raises(Cogworker::OverLimit) { one.within_limit { flunk 'ran over the limit' } }
    assert_match(/rb-single/, error.message)
    assert_in_delta 0.1, Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, 1.5
    lease.release
    lease.release
    assert_equal :ran, one.within_limit(wait: 0) { :ran }
  end

  def test_definitions_are_checked_naming_the_field
    assert_raises(Cogworker::InvalidArgument) { Cogworker::Limiter.bucket('rb-bad', 0, 1) }
    error = assert_raises(Cogworker::InvalidArgument) { Cogworker::Limiter.leaky('rb-bad', 1, :fortnight) }
    assert_match(/interval/, error.message)
    assert_equal '#<Cogworker::Limiter window rb-api limit=10>', Cogworker::Limiter.window('rb-api', 10, :minute).inspect
  end

  def test_a_job_declaring_a_limiter_defined_here_runs_within_it
    LimitedJob::STATE.merge!(now: 0, most: 0, ran: 0)
    Cogworker::Limiter.concurrent('rb-one', 1)
    4.times { LimitedJob.perform_async(0.1) }
    start_runner(concurrency: 4)
    wait_for('all four ran', timeout: 20) { LimitedJob::STATE[:ran] == 4 }
    assert_equal 1, LimitedJob::STATE[:most]
  end
end
