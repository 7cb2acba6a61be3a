# frozen_string_literal: true

require_relative 'test_helper'

# A job class whose group is computed from its args.
class ByAccountJob
  include Cogworker::Job
  cogworker_options group: ->(account_id, *) { "acct:#{account_id}" }
  def perform(account_id, n) = Jobs.record([account_id, n])
end

# A job class whose group is its account, at most 2 of an account's jobs
# running at once across the fleet; it notes the most that ran at once.
class CappedJob
  include Cogworker::Job
  cogworker_options group: ->(account_id, *) { "acct:#{account_id}" }, group_cap: 2
  LOCK = Mutex.new
  RUNNING = Hash.new { |h, k| h[k] = [0, 0] }

  def perform(account_id, n)
    LOCK.synchronize do
      RUNNING[account_id][0] += 1
      RUNNING[account_id][1] = RUNNING[account_id].max
    end
    sleep 0.05
    LOCK.synchronize { RUNNING[account_id][0] -= 1 }
    Jobs.record([account_id, n])
  end
end

# A job class whose group is its API key, 3 of a key's jobs starting per 0.5 s.
class PacedJob
  include Cogworker::Job
  cogworker_options group: ->(api_key, *) { "api:#{api_key}" }, group_rate: 3, group_rate_period: 0.5
  def perform(api_key, n) = Jobs.record([api_key, n, Process.clock_gettime(Process::CLOCK_MONOTONIC)])
end

# Fair groups inside a queue (issue #46): a job's group, given at its push
# or computed from its args by its declaration, and the turns groups take.
class TestGroups < Minitest::Test
  include CogworkerTest

  def test_a_declared_group_is_computed_from_each_pushs_args_and_checked_by_the_core
    Cogworker::Testing.fake! do
      ByAccountJob.perform_async(42, 1)
      ByAccountJob.set(group: 'fixed').perform_async(7, 2)
      ByAccountJob.set(group: proc { nil }).perform_async(7, 3)
      Cogworker::Client.push('EchoJob', [1], group: 'tenant-1')
      Cogworker::Client.push_bulk('ByAccountJob', [[1, 0], [2, 0]], group: ->(a, _) { "t#{a}" })
      groups = Cogworker::Testing.jobs_for('ByAccountJob').map { |job| job['group'] }
      assert_equal ['acct:42', 'fixed', nil, 't1', 't2'], groups
      assert_equal 'tenant-1', EchoJob.jobs.first['group']
      # What the Proc returns is checked as any group; what it raises, the
      # push raises.
      ['', 42, 'x' * 257, "a\nb"].each do |bad|
        error = assert_raises(Cogworker::InvalidJob) { ByAccountJob.set(group: proc { bad }).perform_async(1, 1) }
        assert_includes error.message, 'group'
      end
      assert_raises(ZeroDivisionError) { ByAccountJob.set(group: proc { 1 / 0 }).perform_async(1, 1) }
      ['', 42, -1, Float::NAN, Float::INFINITY, ['a'], { 'a' => 1 }].each do |bad|
        error = assert_raises(Cogworker::InvalidJob) { EchoJob.set(group: bad).perform_async(1) }
        assert_includes error.message, 'group'
      end
    end
    error = assert_raises(Cogworker::InvalidJob) do
      Class.new { include Cogworker::Job }.class_eval { cogworker_options(group: 7) }
    end
    assert_includes error.message, 'group'
  end

  def test_a_tenants_backlog_does_not_hold_back_anothers_jobs
    30.times { |n| ByAccountJob.perform_async(1, n) }
    ByAccountJob.perform_async(2, 0)
    ByAccountJob.perform_async(2, 1)
    EchoJob.perform_async('plain')
    assert_equal '30', @redis.cli('LLEN', 'cogworker:group:default acct:1')
    assert_equal 33, Cogworker::Api.new.queue('default')['size']
    start_runner(concurrency: 1)
    wait_for('every job ran') { Jobs.seen.size == 33 }
    seen = Jobs.seen
    assert_operator seen.index([2, 0]), :<, 4, seen.inspect
    assert_operator seen.index([2, 1]), :<, 7, seen.inspect
    assert_operator seen.index(['plain']), :<, 4, seen.inspect
    assert_equal (0...30).to_a, seen.select { |account, _| account == 1 }.map(&:last)
    # The next fetch finds the groups empty and drops them.
    wait_for('no group key left') { @redis.cli('KEYS', 'cogworker:group*') == '' }
  end
end

# A concurrency limit keyed by the job's args: its group, with the cap its
# class declares (issue #46 part 2).
class TestGroupCaps < Minitest::Test
  include CogworkerTest

  def test_a_cap_declared_on_the_class_limits_each_key_fleet_wide
    CappedJob::RUNNING.clear
    12.times { |n| CappedJob.perform_async(n % 3, n) }
    assert_equal [2, 2, 2], Cogworker::Api.new.groups('default').map { |group| group['cap'] }
    start_runner(concurrency: 8)
    wait_for('every job ran') { Jobs.seen.size == 12 }
    assert_equal({ 0 => [0, 2], 1 => [0, 2], 2 => [0, 2] }, CappedJob::RUNNING)
    # The next fetch finds the groups empty and drops them.
    wait_for('no group key left') { @redis.cli('KEYS', 'cogworker:group*') == '' }
  end

  def test_a_rate_declared_on_the_class_paces_each_key
    9.times { |n| PacedJob.perform_async(1, n) }
    PacedJob.perform_async(2, 0)
    first = Cogworker::Api.new.groups('default').min_by { |group| group['name'] }
    assert_equal [3, 0.5], first.values_at('rate', 'rate_period')
    start_runner(concurrency: 8)
    wait_for('every paced job ran') { Jobs.seen.size == 10 }
    key1 = Jobs.seen.select { |key, *| key == 1 }.map(&:last)
    assert_operator key1.last - key1.first, :>=, 0.9, '9 at 3 per 0.5 s take at least two more periods'
    key2 = Jobs.seen.find { |key, *| key == 2 }.last
    assert_operator key2, :<, key1.last, 'the other key did not wait behind it'
    [0, -1, 2.5, '10/s', true].each do |bad|
      error = assert_raises(Cogworker::InvalidJob) { PacedJob.set(group_rate: bad).perform_async(1, 1) }
      assert_includes error.message, 'group_rate'
    end
  end

  def test_a_backlog_cap_refuses_a_push_past_it_naming_the_group
    2.times { |n| EchoJob.set(group: 'inbox:1', group_backlog: 2).perform_async(n) }
    error = assert_raises(Cogworker::OverLimit) { EchoJob.set(group: 'inbox:1', group_backlog: 2).perform_async(3) }
    assert_includes error.message, 'group inbox:1'
    3.times { |n| EchoJob.set(group: 'inbox:2', group_backlog: 1, group_backlog_full: 'drop_oldest').perform_async(n) }
    assert_equal 2, Cogworker::Api.new.stats['backlog_dropped']
    sizes = Cogworker::Api.new.groups('default').map { |group| group.values_at('name', 'size') }.sort
    assert_equal [['inbox:1', 2], ['inbox:2', 1]], sizes
  end

  def test_a_bad_group_cap_is_refused_at_push_and_at_declaration
    [0, -1, 2_000_000, 1.5, Float::NAN, Float::INFINITY, '2', [2], true].each do |bad|
      error = assert_raises(Cogworker::InvalidJob) { CappedJob.set(group_cap: bad).perform_async(1, 1) }
      assert_includes error.message, 'group_cap'
    end
    error = assert_raises(Cogworker::InvalidJob) do
      Class.new { include Cogworker::Job }.class_eval { cogworker_options(group: 'g', group_cap: -3) }
    end
    assert_includes error.message, 'group_cap'
  end
end

# Groups through the ops API, as in every language.
class TestGroupsApi < Minitest::Test
  include CogworkerTest

  def test_groups_are_listed_weighed_paused_and_resumed_through_the_api
    3.times { |n| ByAccountJob.perform_async(1, n) }
    api = Cogworker::Api.new
    api.set_group_weight('default', 'acct:1', 2.5)
    assert api.pause_group('default', 'acct:1')
    group = api.groups('default').first
    assert_equal ['acct:1', 3, 2.5, true, nil], group.values_at('name', 'size', 'weight', 'paused', 'turns')
    assert api.resume_group('default', 'acct:1')
    refute api.groups('default').first['paused']
    [0, -1, Float::NAN, 2e6].each do |bad|
      error = assert_raises(Cogworker::InvalidArgument) { api.set_group_weight('default', 'acct:1', bad) }
      assert_includes error.message, 'weight'
    end
    assert_raises(Cogworker::InvalidArgument) { api.pause_group('default', '') }
  end
end
