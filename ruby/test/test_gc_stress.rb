# frozen_string_literal: true

require_relative 'test_helper'

# The binding's object lifetimes under GC.stress (a collection at every
# allocation): every native entry point, driven from one thread.
class TestGCStress < Minitest::Test
  include CogworkerTest

  def test_native_calls_survive_gc_stress
    settings = Cogworker.config.to_h.merge(queues: %w[default], labels: %w[a b], concurrency: 2)
    client = Cogworker::Native::Client.new(settings)
    entry = JSON.generate('cron' => '0 0 1 1 *', 'class' => 'EchoJob', 'args' => ['ü'])
    worker = Cogworker::Native::Worker.new(settings, [entry], %w[EchoJob])
    api = Cogworker::Native::Api.new(settings)
    worker.start
    GC.stress = true
    begin
      jids = client.push_bulk(Array.new(5) { |i| JSON.generate('class' => 'EchoJob', 'args' => [i, 'ü' * i, 2**70]) })
      assert_equal 5, jids.size
      taken = []
      deadline = Time.now + 60
      while taken.size < 5 && Time.now < deadline
        job = worker.next_job(0.2)
        next unless job.is_a?(Cogworker::Native::Delivery)

        taken << [job.class_name, job.jid, JSON.parse(job.args_json)]
        if taken.size.odd?
          worker.complete(job)
        else
          worker.fail(job, 'GcError', "bad \xff".b, ['a.rb:1', "b\xfe.rb:2".b], 0.5)
        end
      end
      assert_equal jids.sort, taken.map { |t| t[1] }.sort
      assert(taken.all? { |t| t[2][2] == 2**70 })
      assert_raises(Cogworker::ConfigError) { Cogworker::Native.check_config(settings.merge(concurrency: 0)) }
      queues = JSON.parse(api.queues_json)
      assert_equal 'default', queues.first['name']
      assert_equal 20, Cogworker::Native.periodic_id(entry).size
      assert_raises(Cogworker::ConfigError) { Cogworker::Native.periodic_id('{"cron": "x", "class": "A"}') }
      refute_nil client.push(JSON.generate('class' => 'EchoJob', 'args' => ['u'], 'unique_for' => 30))
      assert_nil client.push(JSON.generate('class' => 'EchoJob', 'args' => ['u'], 'unique_for' => 30))
      assert_equal 1, JSON.parse(api.unique_locks_json(10)).size
      assert_kind_of Array, JSON.parse(api.periodic_json)
    ensure
      GC.stress = false
    end
    wait_for('settled') { api.stats(nil) == [3, 2] }
    worker.stop
    assert worker.wait(15)
  end
end
