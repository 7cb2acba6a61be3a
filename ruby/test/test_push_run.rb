# frozen_string_literal: true

require_relative 'test_helper'

class TestPushRun < Minitest::Test
  include CogworkerTest

  ARGS = ['héllo ✓ 🚀', 2**70, -(2**65), { 'nested' => [1, nil, { 'x' => true }], 'f' => 1.5 }, nil, [], '',
          1.0, 1e20, 0.1, 2**63, -(2**63), false, { 'ключ' => {}, 'b' => 'z', 'a' => 'y' }].freeze

  def test_perform_async_runs_with_exact_args
    start_runner(concurrency: 4)
    jid = EchoJob.perform_async(*ARGS)
    assert_equal 24, jid.size
    wait_for('ran') { Jobs.seen.include?(ARGS) }
    # Value for value, class for class (1.0 a Float, 2**63 an Integer) and
    # the hash's keys in their order, as JSON.parse gives them.
    seen = Jobs.seen.find { |args| args == ARGS }
    assert_equal ARGS.map(&:class), seen.map(&:class)
    assert_equal ARGS.last.keys, seen.last.keys
  end

  def test_client_push_by_class_name_bulk_and_options
    start_runner(queues: %w[critical default])
    Cogworker::Client.push('CriticalJob', ['via client'], queue: 'critical')
    jids = Cogworker::Client.push_bulk('EchoJob', (0...50).map { |i| [i] })
    assert_equal 50, jids.uniq.size
    EchoJob.set(queue: 'critical').perform_async('set')
    wait_for('52 ran') { Jobs.seen.size == 52 }
    assert_includes Jobs.seen, [:critical, 'via client']
    assert_includes Jobs.seen, ['set']
  end

  # Args are an Array, as Sidekiq's Client.push insists (issue #44 item
  # 20: "notarray" was pushed as ["notarray"]).
  def test_a_push_whose_args_are_not_an_array_is_refused
    client = Cogworker::Client.new
    error = assert_raises(Cogworker::InvalidArgument) { client.push('EchoJob', 'notarray') }
    assert_includes error.message, 'args'
    assert_raises(Cogworker::InvalidArgument) { Cogworker::Client.push_bulk('EchoJob', [[1], 2]) }
    assert_empty Cogworker::Api.new.queues
  end

  def test_scheduled_jobs_run_on_time
    start_runner
    due = Time.now.to_f + 1.0
    EchoJob.perform_in(1.0, 'later')
    EchoJob.perform_at(Time.at(due + 0.2), 'at')
    assert_equal 2, Cogworker::Api.new.set_size('scheduled')
    wait_for('scheduled ran', timeout: 10) { Jobs.seen.include?(['later']) && Jobs.seen.include?(['at']) }
    assert_operator Time.now.to_f, :>=, due
  end

  def test_api_stats_and_processes
    runner = start_runner
    EchoJob.perform_async(1)
    api = Cogworker::Api.new
    wait_for('counted') { api.stats['processed'] == 1 }
    wait_for('registered') { api.processes.any? { |p| p['identity'] == runner.identity } }
    assert_equal 10, api.processes.first['info']['concurrency']
  end
end
