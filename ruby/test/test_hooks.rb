# frozen_string_literal: true

require_relative 'test_helper'
require 'timeout'
require_relative 'conformance_jobs'

class HooksRecordJob
  include Cogworker::Job
  cogworker_options retry: 2
  cogworker_retry_in { |_count, _error| 3600 }

  def perform(value)
    raise ArgumentError, 'handler failed' if value == 'raise'

    Jobs.record([:handler, value])
  end
end

class HooksDiesJob
  include Cogworker::Job
  cogworker_options retry: 0
  def perform = raise(ArgumentError, 'no retries left')
end

# Server middleware, Sidekiq's shape: made anew per job with its arguments.
class OuterMiddleware
  def initialize(tag) = @tag = tag

  def call(instance, job, queue)
    Jobs.record([:outer_before, @tag, instance.class.name, job['tenant'], queue])
    yield
    Jobs.record([:outer_after, @tag])
  end
end

class InnerMiddleware
  def call(_instance, job, _queue)
    Jobs.record([:inner_before, job['args'], job['jid'].size])
    job['args'] = ["#{job['args'].first}!"]
    yield
  end
end

class GateMiddleware
  def call(_instance, job, _queue)
    return Jobs.record([:skipped, job['jid']]) if job['args'] == ['skip']

    begin
      yield
    rescue ArgumentError
      Jobs.record([:swallowed, job['jid']])
    end
  end
end

class TenantSeen
  def call(_instance, job, _queue)
    Jobs.record([:tenant, job['args'].first, job['tenant'], job['retry_count'] || 0])
    yield
  end
end

class HooksFlakyJob
  include Cogworker::Job
  cogworker_options retry: 3
  cogworker_retry_in { |_count, _error| 0 }

  def perform(key)
    Jobs.record([:run, key])
    raise ArgumentError, 'first run fails' if Jobs.seen.count([:run, key]) == 1
  end
end

# Apps plug into a worker: middleware in order (payload fields, args
# changed, a job skipped or its failure swallowed), error handlers (one
# that raises changes nothing; one writes to a file, as a reporter would),
# death handlers and the startup/quiet/shutdown/heartbeat hooks.
class TestHooks < Minitest::Test
  include CogworkerTest

  def test_server_middleware_runs_in_order_and_sees_every_payload_field
    Cogworker.configure do |c|
      c.server_middleware do |chain|
        chain.add OuterMiddleware, 'o'
        chain.add InnerMiddleware
      end
    end
    assert_equal [OuterMiddleware, InnerMiddleware], Cogworker.config.server_middleware.entries
    Cogworker::Client.new.push_payloads([{ 'class' => 'HooksRecordJob', 'args' => ['x'], 'tenant' => 'acme' }])
    start_runner
    wait_for('the job ran') { Jobs.seen.include?([:outer_after, 'o']) }
    assert_equal [[:outer_before, 'o', 'HooksRecordJob', 'acme', 'default'], [:inner_before, ['x'], 24],
                  [:handler, 'x!'], [:outer_after, 'o']], Jobs.seen
  end

  def test_middleware_can_skip_a_job_or_swallow_its_failure
    Cogworker.config.server_middleware { |chain| chain.add GateMiddleware }
    skipped = HooksRecordJob.perform_async('skip')
    swallowed = HooksRecordJob.perform_async('raise')
    start_runner
    api = Cogworker::Api.new
    wait_for('both settled') { api.stats['processed'] == 2 }
    assert_equal [[:skipped, skipped], [:swallowed, swallowed]].sort, Jobs.seen.sort
    assert_equal [0, 0], [api.set_size('retry'), api.stats['failed']]
  end

  def test_error_handlers_see_every_failure_and_one_that_raises_changes_nothing
    log = File.join(Dir.mktmpdir, 'errors.log')
    Cogworker.configure do |c|
      c.error_handlers << ->(_ex, _ctx) { raise 'the reporter is down' }
      c.error_handlers << lambda { |ex, ctx|
        File.open(log, 'a') { |f| f.puts JSON.generate([ex.class.name, ex.message, ctx[:jid], ctx[:job]['class'], ctx[:queue]]) }
      }
    end
    jid = HooksRecordJob.perform_async('raise')
    start_runner
    entry = wait_for('filed for retry') { Cogworker::Api.new.find('retry', jid) }
    assert_equal 'ArgumentError', entry['job']['error_class']
    wait_for('reported') { File.exist?(log) && !File.read(log).empty? }
    assert_equal [['ArgumentError', 'handler failed', jid, 'HooksRecordJob', 'default']],
                 File.readlines(log).map { |l| JSON.parse(l) }
  end

  def test_death_and_lifecycle_hooks_run_in_the_worker
    Cogworker.configure do |c|
      %i[startup quiet shutdown heartbeat].each { |event| c.on(event) { Jobs.record(event) } }
      # Sidekiq's shape (issue #44 item 19): the exception the job raised,
      # of its own class, message and backtrace; with error_class too.
      c.death_handlers << lambda { |job, ex|
        Jobs.record([:death, job['jid'], ex.class.name, ex.error_class, ex.message, ex.backtrace.to_a.any?])
      }
      c.death_handlers << ->(_job, _ex) { raise 'pager is down' }
    end
    assert_raises(Cogworker::ConfigError) { Cogworker.config.on(:started) {} }
    runner = start_runner
    wait_for('startup and a heartbeat') { Jobs.seen.include?(:startup) && Jobs.seen.include?(:heartbeat) }
    jid = HooksDiesJob.perform_async
    wait_for('the death hook') do
      Jobs.seen.include?([:death, jid, 'ArgumentError', 'ArgumentError', 'no retries left', true])
    end
    assert_equal 1, Cogworker::Api.new.set_size('dead')
    runner.quiet
    wait_for('quiet') { Jobs.seen.include?(:quiet) }
    runner.stop
    assert runner.wait(15)
    assert runner.join(5)
    seen = Jobs.seen
    assert_operator seen.index(:startup), :<, seen.index(:quiet)
    assert_operator seen.index(:quiet), :<, seen.index(:shutdown)
  end

  def test_client_middleware_adds_fields_that_survive_a_retry_or_stops_a_push
    Cogworker.configure do |c|
      c.client_middleware { |chain| chain.add Conformance::TenantStamp }
      c.server_middleware { |chain| chain.add TenantSeen }
    end
    assert_nil HooksFlakyJob.perform_async('stop')
    jids = Cogworker::Client.push_bulk('HooksFlakyJob', [['a'], ['stop'], ['b']])
    assert_nil jids[1]
    later = HooksFlakyJob.perform_in(3600, 'c')
    assert_equal 'acme', Cogworker::Api.new.find('scheduled', later)['job']['tenant']
    start_runner
    wait_for('a and b ran twice') { Jobs.seen.count([:run, 'a']) == 2 && Jobs.seen.count([:run, 'b']) == 2 }
    tenants = Jobs.seen.select { |s| s.first == :tenant }.sort_by(&:to_s)
    assert_equal [[:tenant, 'a', 'acme', 0], [:tenant, 'a', 'acme', 1], [:tenant, 'b', 'acme', 0], [:tenant, 'b', 'acme', 1]],
                 tenants
  end

  def test_client_middleware_also_stamps_the_periodic_jobs_a_worker_pushes
    Cogworker.configure do |c|
      c.client_middleware { |chain| chain.add Conformance::TenantStamp }
      c.periodic { |mgr| mgr.register('* * * * * *', 'HooksTick', queue: 'ticks') } # a queue it does not take
    end
    start_runner
    api = Cogworker::Api.new
    job = wait_for('a periodic job') { api.queue_jobs('ticks', 0, 10).first }
    assert_equal %w[HooksTick acme], job.values_at('class', 'tenant')
  end

  # The periodic ticker's request to the client middleware never waits
  # behind an app's hook: while a death handler takes its time, every
  # second's job is pushed with the middleware's fields, no slot skipped.
  def test_a_slow_death_hook_holds_up_no_periodic_push
    entered = Queue.new
    release = Queue.new
    Cogworker.configure do |c|
      c.client_middleware { |chain| chain.add Conformance::TenantStamp }
      c.periodic { |mgr| mgr.register('* * * * * *', 'HooksTick', queue: 'ticks') }
      c.death_handlers << lambda { |_job, _ex|
        entered << true
        Timeout.timeout(30) { release.pop }
      }
    end
    start_runner
    api = Cogworker::Api.new
    HooksDiesJob.perform_async
    Timeout.timeout(15) { entered.pop }
    before = api.queue_jobs('ticks', 0, 1000).size
    # The ticker waits at most 5 s for an answer: behind the hook, these
    # were pushed without the middleware's fields, and slots were skipped.
    entries = wait_for('8 more ticks') { (e = api.queue_jobs('ticks', 0, 1000)).size >= before + 8 && e }
    assert release.empty?
    assert(entries.all? { |e| e['tenant'] == 'acme' }, entries.inspect)
    slots = entries.map { |e| e['periodic_slot'] }.sort
    assert_equal (slots.first...(slots.first + slots.size)).to_a, slots, 'no slot skipped'
  ensure
    release&.push(true)
  end
end
