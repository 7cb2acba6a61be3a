# frozen_string_literal: true

require_relative 'test_helper'

# A job class whose pushes of one document collapse into one run.
class ReindexJob
  include Cogworker::Job
  cogworker_options key: ->(doc_id, *) { "doc:#{doc_id}" }, debounce: 0.3
  def perform(doc_id, n) = Jobs.record([doc_id, n])
end

# A job class with at most one pending job per report.
class ReportJob
  include Cogworker::Job
  cogworker_options key: ->(report_id, *) { "report:#{report_id}" }, unique_for: 60
  def perform(report_id, _n) = Jobs.record(['report', report_id])
end

# A job class whose pushes of one feed are dropped within a minute of the last.
class PollJob
  include Cogworker::Job
  cogworker_options key: ->(feed_id, *) { "feed:#{feed_id}" }, throttle: 60, throttle_excess: 'drop'
  def perform(feed_id, n) = Jobs.record(['poll', feed_id, n])
end

# A job class whose waiting job for a user a newer push replaces.
class SyncJob
  include Cogworker::Job
  cogworker_options key: ->(user_id, *) { "user:#{user_id}" }, replace: true
  def perform(user_id, n) = Jobs.record(['sync', user_id, n])
end

# A job class whose jobs of one account are applied one at a time, in order.
class ApplyJob
  include Cogworker::Job
  cogworker_options key: ->(account, *) { "acct:#{account}" }, sequence: true
  def perform(account, n)
    Jobs.record(['apply', account, n])
    sleep 0.02
  end
end

# Flow control by key (issue #46 part 3): a debounce or a singleton
# declared on a class, its key computed from each push's args.
class TestFlow < Minitest::Test
  include CogworkerTest

  def test_a_debounce_declared_on_a_class_runs_each_keys_burst_once_with_its_last_args
    jids = 20.times.map { |n| ReindexJob.perform_async(1, n) }.uniq
    other = ReindexJob.perform_async(2, 0)
    assert_equal 1, jids.size
    refute_includes jids, other
    start_runner(concurrency: 2)
    wait_for('both bursts ran') { Jobs.seen.size == 2 }
    assert_equal [[1, 19], [2, 0]], Jobs.seen.sort
  end

  def test_a_singleton_answers_concurrent_pushes_with_the_pending_jobs_jid
    answers = 10.times.map { |t| Thread.new { 10.times.map { |n| ReportJob.perform_async(7, (10 * t) + n) } } }
                     .flat_map(&:value)
    assert_equal 100, answers.size
    assert_equal 1, answers.uniq.size, answers.inspect
    refute_nil answers.first
    assert_equal 1, Cogworker::Api.new.queue('default')['size']
    start_runner(concurrency: 1)
    wait_for('the report ran') { Jobs.seen == [['report', 7]] }
  end

  def test_a_throttle_declared_on_a_class_drops_a_keys_pushes_until_its_next_window
    answers = 5.times.map { |n| PollJob.perform_async(1, n) } + [PollJob.perform_async(2, 0)]
    refute_nil answers[0]
    assert_equal [nil] * 4, answers[1..4]
    refute_nil answers[5]
    assert_equal '4', @redis.cli('GET', 'cogworker:stat:throttled')
    delayed = PollJob.set(throttle_excess: 'delay').perform_async(1, 9)
    assert_equal [delayed], Cogworker::Api.new.entries('scheduled').map { |entry| entry['job']['jid'] }
    start_runner(concurrency: 1)
    wait_for('the two feeds polled') { Jobs.seen.sort == [['poll', 1, 0], ['poll', 2, 0]] }
  end

  def test_a_replacing_push_replaces_its_keys_waiting_job_in_place
    jids = 5.times.map { |n| SyncJob.perform_async(1, n) }.uniq
    other = SyncJob.perform_async(2, 0)
    assert_equal 1, jids.size
    refute_includes jids, other
    assert_equal 2, Cogworker::Api.new.queue('default')['size']
    assert_equal 4, Cogworker::Api.new.stats['replaced']
    keys = Cogworker::Api.new.flow_keys.to_h { |k| [[k['mode'], k['class'], k['key']], [k['jid'], k['waiting']]] }
    assert_equal({ %w[replace SyncJob user:1] => [jids.first, true], %w[replace SyncJob user:2] => [other, true] }, keys)
    start_runner(concurrency: 1)
    wait_for('both users synced') { Jobs.seen == [['sync', 1, 4], ['sync', 2, 0]] }
    error = assert_raises(Cogworker::InvalidJob) { SyncJob.set(replace: 'yes').perform_async(1, 1) }
    assert_includes error.message, 'replace'
  end

  def test_a_sequence_declared_on_a_class_runs_each_keys_jobs_in_push_order
    6.times do |n|
      ApplyJob.perform_async(1, n)
      ApplyJob.perform_async(2, n)
    end
    assert_equal [1, 1], Cogworker::Api.new.groups('default').map { |group| group['cap'] }
    start_runner(concurrency: 4)
    wait_for('every job applied') { Jobs.seen.size == 12 }
    [1, 2].each do |account|
      assert_equal (0...6).to_a, Jobs.seen.select { |_, a, _| a == account }.map(&:last)
    end
  end

  def test_flow_options_are_checked_where_they_are_written_and_at_each_push
    error = assert_raises(Cogworker::InvalidJob) do
      Class.new { include Cogworker::Job }.class_eval { cogworker_options(debounce: 1) }
    end
    assert_includes error.message, 'key'
    [0, -1, Float::NAN, 1e300, 'soon', true].each do |bad|
      error = assert_raises(Cogworker::InvalidJob) do
        Class.new { include Cogworker::Job }.class_eval { cogworker_options(key: proc { 'k' }, debounce: bad) }
      end
      assert_includes error.message, 'debounce'
    end
    error = assert_raises(Cogworker::InvalidJob) { ReindexJob.set(debounce: 2, debounce_max: 1).perform_async(1, 1) }
    assert_includes error.message, 'debounce_max'
    ['', 42, 'x' * 257, "a\nb", ['k']].each do |bad|
      error = assert_raises(Cogworker::InvalidJob) { ReindexJob.set(key: proc { bad }).perform_async(1, 1) }
      assert_includes error.message, 'key'
    end
    assert_raises(ZeroDivisionError) { ReindexJob.set(key: proc { 1 / 0 }).perform_async(1, 1) }
  end
end
