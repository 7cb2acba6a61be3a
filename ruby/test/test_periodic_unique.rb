# frozen_string_literal: true

require_relative 'test_helper'

# Periodic entries and unique jobs from Ruby: validation, a worker process
# ticking (and booting past a class it can't resolve), unique pushes that
# dedupe until the job ran.
class TestPeriodicUnique < Minitest::Test
  include CogworkerTest
  EXE = File.expand_path('../exe/cogworker', __dir__)
  PERIODIC_JOBS = File.expand_path('periodic_jobs.rb', __dir__)

  def test_bad_entries_name_the_field
    {
      ['61 * * * *', {}] => /periodic.cron/,
      ['* * * * *', { tz: 'Mars/Olympus' }] => /periodic.tz/,
      ['* * * * *', { unique: :forever }] => /periodic.unique/,
      ['* * * * *', { queue: '' }] => /periodic.queue/
    }.each do |(cron, options), message|
      error = assert_raises(Cogworker::ConfigError) do
        Cogworker.configure { |c| c.periodic { |mgr| mgr.register(cron, 'Some::Job', **options) } }
      end
      assert_match message, error.message
    end
    assert_empty Cogworker.config.periodic.entries
  end

  def test_entries_take_the_class_queue_and_have_a_stable_id
    ids = Array.new(2) do
      Cogworker.config.periodic.register('0 9 * * 1-5', CriticalJob, unique: :until_executed, tz: 'Europe/Paris')
    end
    assert_equal 1, ids.uniq.size
    assert_equal 20, ids.first.size
    entry = Cogworker.config.periodic.entries.first
    assert_equal %w[CriticalJob critical until_executed], entry.values_at('class', 'queue', 'unique')
  end

  def test_a_worker_process_ticks_and_boots_past_an_unresolvable_class
    Dir.mktmpdir('cogworker-periodic-') do |tmp|
      results = File.join(tmp, 'ticks.txt')
      log = File.join(tmp, 'worker.log')
      env = { 'COGWORKER_REDIS_URL' => @redis.url, 'TEST_RESULTS_FILE' => results }
      pid = spawn_child(env, 'ruby', EXE, '-r', PERIODIC_JOBS, '-c', '2', out: File::NULL, err: log)
      begin
        wait_for('three ticks', timeout: 20) { File.exist?(results) && File.readlines(results).size >= 3 }
        api = Cogworker::Api.new
        tick = api.periodic.find { |e| e['class'] == 'TickJob' }
        assert_operator tick['last_slot'], :>, 0
        wait_for('the unresolvable entry pushed') { api.queues.any? { |q| q['name'] == 'elsewhere' && q['size'].positive? } }
      ensure
        Process.kill('TERM', pid)
        _, status = Process.wait2(pid)
      end
      assert status.success?, File.read(log)
      assert_equal ['"rb-tick"'], File.readlines(results, chomp: true).uniq
      assert_match(/periodic job class Missing::Report can't be resolved/, File.read(log))
    end
  end

  def test_unique_jobs_dedupe_until_they_ran
    first = UniqueJob.perform_async(1)
    refute_nil first
    assert_nil UniqueJob.perform_async(1), 'duplicate refused'
    refute_nil UniqueJob.perform_async(2)
    assert_nil Cogworker::Client.push('UniqueJob', [1], unique_for: 60)
    api = Cogworker::Api.new
    held = api.unique_locks.find { |l| l['jid'] == first }
    assert_operator held['ttl'], :<=, 60
    assert api.clear_unique_lock(held['digest'])
    refute_nil UniqueJob.perform_async(1), 'pushable again once cleared'

    start_runner
    wait_for('all three ran') { api.stats['processed'] == 3 }
    assert_empty api.unique_locks
    refute_nil UniqueJob.perform_async(1), 'released once it ran'
  end
end
