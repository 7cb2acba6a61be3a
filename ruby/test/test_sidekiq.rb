# frozen_string_literal: true

require_relative 'test_helper'
require 'json'
require 'open3'

# `require 'cogworker/sidekiq'`: a Sidekiq app (sidekiq_app/app.rb) runs on
# cogworker unchanged. In processes of their own: the shim defines
# ::Sidekiq and sets the sidekiq layout, which no other test may see.
class TestSidekiq < Minitest::Test
  include CogworkerTest

  APP = File.expand_path('sidekiq_app/app.rb', __dir__)
  LIB = File.expand_path('../lib', __dir__)
  EXE = File.expand_path('../exe/cogworker', __dir__)

  def app_env
    @ran_file ||= File.join(Dir.mktmpdir('sidekiq-app'), 'ran.jsonl')
    { 'REDIS_URL' => @redis.url, 'RAN_FILE' => @ran_file }
  end

  # What the jobs recorded (a last line still being written waits for the next read).
  def ran
    return [] unless File.exist?(@ran_file)

    File.readlines(@ran_file).select { |line| line.end_with?("\n") }.map { |line| JSON.parse(line) }
  end

  def run_app(command)
    out, err, status = Open3.capture3(app_env, RbConfig.ruby, '-I', LIB, APP, command)
    assert status.success?, "app.rb #{command} failed: #{err}"
    JSON.parse(out)
  end

  def test_a_sidekiq_app_runs_unchanged_on_a_cogworker_worker
    env = app_env
    worker = Process.spawn(env.merge('COGWORKER_LOG' => 'warn'), RbConfig.ruby, '-I', LIB, EXE, '-r', APP,
                           '-q', 'default', '-q', 'low', '--heartbeat-interval', '0.5',
                           '--scheduler-poll-interval', '0.2', out: File::NULL, err: File::NULL)
    @children << worker
    jids = run_app('push')
    assert_equal 6, jids.compact.size
    wait_for('the jobs, the retry and the exhaustion', timeout: 20) do
      ran.count { |r| r[0] == 'HardJob' } == 5 && ran.any? { |r| r[0] == 'exhausted' }
    end
    hard = ran.select { |r| r[0] == 'HardJob' }.map { |r| r[1..] }.sort_by(&:last)
    assert_equal [['now', 1], ['later', 2], ['set', 3], ['bulk', 4], ['bulk', 5]], hard
    assert_equal [[0, 'flaky'], [1, 'flaky']], ran.select { |r| r[0] == 'retry_in' }.map { |r| r[1..] },
                 'sidekiq_retry_in counts from 0, as in Sidekiq'
    exhausted = ran.find { |r| r[0] == 'exhausted' }
    assert_equal [jids[3], 1, 'flaky'], exhausted[1..], 'out of retries: the job as Sidekiq files it'
    assert_equal 7, ran.count { |r| r[0] == 'middleware' }, 'every run went through the server middleware'
    assert_includes ran, %w[middleware HardJob low]
    Process.kill('TERM', worker)
    _, status = Process.wait2(worker)
    @children.delete(worker)
    assert status.success?
    # Sidekiq's keys, as Sidekiq writes them.
    api = Cogworker::Api.new(Cogworker::Config.new(redis_url: @redis.url, layout: 'sidekiq'))
    dead = api.entries('dead').map { |entry| entry['job'] }
    assert_equal [jids[3]], dead.map { |job| job['jid'] }
    assert_kind_of String, dead.first['error_backtrace'], "backtrace: 5 keeps it, compressed as Sidekiq's"
    assert_equal 1, dead.first['retry_count'], 'retried once: Sidekiq counts 1'
    assert_equal ['queue:default', 'queue:low'].sort, api.queues.map { |q| "queue:#{q['name']}" }.sort
  end

  FLEET = File.expand_path('sidekiq_app/fleet.rb', __dir__)
  SIDEKIQ_CLIENT = File.expand_path('../../core/tests/sidekiq/client.rb', __dir__)

  def fleet_env(backend) = app_env.merge('BACKEND' => backend)

  def push_fleet(backend, first, count)
    _, err, status = Open3.capture3(fleet_env(backend), RbConfig.ruby, '-I', LIB, FLEET, 'push', first.to_s, count.to_s)
    assert status.success?, "fleet.rb push failed: #{err}"
  end

  def start_sidekiq
    pid = Process.spawn(fleet_env('sidekiq'), 'sidekiq', '-r', FLEET, '-c', '5', '-t', '8', '-q', 'default',
                        out: File::NULL, err: File::NULL)
    @children << pid
    pid
  end

  def start_cogworker
    pid = Process.spawn(fleet_env('cogworker').merge('COGWORKER_LOG' => 'warn'), RbConfig.ruby, '-I', LIB, EXE,
                        '-r', FLEET, '-c', '5', '-q', 'default', '--heartbeat-interval', '0.5',
                        '--scheduler-poll-interval', '0.2', out: File::NULL, err: File::NULL)
    @children << pid
    pid
  end

  def stop(pid)
    Process.kill('TERM', pid)
    _, status = Process.wait2(pid)
    @children.delete(pid)
    assert status.success?, "pid #{pid} exited #{status.inspect}"
  end

  # Sidekiq's Web UI Busy page (Debian's sidekiq, in a process of its own).
  def busy_page
    out, err, status = Open3.capture3({ 'REDIS_URL' => @redis.url }, RbConfig.ruby, SIDEKIQ_CLIENT, 'busy_page')
    assert status.success?, err
    JSON.parse(out)['body']
  end

  # Each of `numbers` ran once of each kind, on either backend.
  def assert_each_ran_once(numbers)
    runs = ran.group_by { |kind, number, _| [kind, number] }.transform_values(&:size)
    expected = %w[work later fail_once].product(numbers).to_h { |key| [key, 1] }
    assert_equal expected, runs.select { |key, _| numbers.include?(key[1]) }
  end

  # Issue #49's migration: a Sidekiq 6.4 fleet with jobs queued, scheduled
  # and retrying; cogworker workers join on its Redis, the Sidekiq process
  # stops; then back. Every job runs once (graceful stops give back what
  # they hold), the scheduled and retrying ones when due, and the Web UI
  # shows the cogworker process while it works.
  def test_a_sidekiq_fleet_moves_to_cogworker_and_back_with_nothing_lost
    push_fleet('sidekiq', 0, 60)
    sidekiq = start_sidekiq
    wait_for('Sidekiq working', timeout: 20) { ran.any? { |_, _, backend| backend == 'sidekiq' } }
    cogworker = start_cogworker
    wait_for('the Web UI showing the cogworker process', timeout: 20) { busy_page.include?(":#{cogworker}:") }
    stop(sidekiq)
    wait_for('every job of the first 60 run', timeout: 40) { ran.size >= 180 }
    assert_each_ran_once((0...60).to_a)
    assert ran.any? { |_, _, backend| backend == 'cogworker' }, 'cogworker took its share'

    # And back: jobs pushed by cogworker's Sidekiq API, cogworker stops, Sidekiq runs them.
    push_fleet('cogworker', 100, 30)
    stop(cogworker)
    start_sidekiq
    wait_for('every job of the next 30 run', timeout: 40) { ran.size >= 270 }
    assert_each_ran_once((0...60).to_a + (100...130).to_a)
    assert ran.any? { |_, number, backend| number >= 100 && backend == 'sidekiq' },
           "Sidekiq ran what cogworker's stop left scheduled and retrying"
  end

  def test_sidekiq_testing_is_fake_by_default_and_inline_on_demand
    result = run_app('testing')
    assert_equal [['low', ['fake', 1]]], result['fake']
    assert_equal 0, result['left']
    assert result['fake_mode']
    refute result['server']
    assert_equal 'sidekiq', result['layout']
    assert_equal [%w[HardJob fake] + [1], %w[HardJob inline] + [2]], ran.map { |r| r.first(3) }
  end
end
