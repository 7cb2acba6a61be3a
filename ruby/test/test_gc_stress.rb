# frozen_string_literal: true

require_relative 'test_helper'

# The binding's object lifetimes under GC.stress (a collection at every
# allocation): every native entry point, driven from one thread.
class TestGCStress < Minitest::Test
  include CogworkerTest

  def test_native_calls_survive_gc_stress
    config = Cogworker.config.merge(queues: %w[default], labels: %w[a b], concurrency: 2).native
    client = Cogworker::Native::Client.new(config)
    entry = Cogworker::Native::Periodic.new('0 0 1 1 *', 'EchoJob', { 'args' => ['ü'] }, {})
    worker = Cogworker::Native::Worker.new(config, %w[EchoJob], [entry], false)
    api = Cogworker::Native::Api.new(config)
    worker.start
    GC.stress = true
    begin
      jids = client.push_many('EchoJob', Array.new(5) { |i| [i, 'ü' * i, 2**70, { 'k' => [nil, true, 1.5] }] }, {}, nil, nil)
      assert_equal 5, jids.size
      taken = []
      perform = lambda do |delivery|
        class_name, jid, _queue, _retries, args = delivery.info
        taken << [class_name, jid, args]
        worker.stop if taken.size == 5
        raise 'odd one out' if taken.size.even?

        args
      end
      describe = ->(_delivery, _error) { ['GcError', "bad \xff".b, ['a.rb:1', "b\xfe.rb:2".b], 0.5, false] }
      worker.run_slot(perform, describe)
      assert_equal jids.sort, taken.map { |t| t[1] }.sort
      # The arguments exactly as JSON.parse makes them from the payload.
      taken.each { |t| assert_equal [t[2][0], 'ü' * t[2][0], 2**70, { 'k' => [nil, true, 1.5] }], t[2] }
      assert_raises(Cogworker::ConfigError) { Cogworker::Native::Config.new({ 'concurrency' => 0 }) }
      assert_raises(Cogworker::InvalidArgument) { client.push_many('EchoJob', [[Object.new]], {}, nil, nil) }
      assert_equal 'default', api.call('queues', []).first['name']
      assert_equal 20, entry.pjid.size
      assert_equal ['ü'], entry.entry['args']
      assert_raises(Cogworker::ConfigError) { Cogworker::Native::Periodic.new('x', 'A', {}, {}) }
      refute_nil client.push_many('EchoJob', [['u']], { 'unique_for' => 30, 'result_ttl' => 60 }, nil, nil).first
      assert_nil client.push_many('EchoJob', [['u']], { 'unique_for' => 30 }, nil, nil).first
      assert_equal 1, api.call('unique_locks', [10]).size
      assert_kind_of Array, api.call('periodic', [])
      assert_includes api.admin('stats', nil), 'processed'
      assert_equal 'q', Cogworker::Native.prepare_job('EchoJob', [1], { 'queue' => 'q' })['queue']
      assert_equal %w[pending unknown], client.result('nope', nil)
      assert_equal 'unknown', client.status('nope')
      Cogworker::Native.set_testing_mode('fake')
      assert_equal 24, client.push_many('EchoJob', [['ü']], {}, ->(job) { job }, nil).first.size
      assert_equal [['ü']], Cogworker::Native.testing_jobs('EchoJob').map { |j| j['args'] }
      assert_equal ['ü'], Cogworker::Native.testing_perform_one('EchoJob', ->(job) { job['args'] })
      Cogworker::Native.set_testing_mode(nil)
    ensure
      GC.stress = false
    end
    assert worker.wait(15)
    assert_equal({ 'processed' => 3, 'failed' => 2, 'expired' => 0, 'cancelled' => 0,
                    'collapsed' => 0, 'throttled' => 0, 'replaced' => 0,
                    'backlog_dropped' => 0 }, api.call('stats', []))
  end
end
