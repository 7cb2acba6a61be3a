# frozen_string_literal: true

require_relative 'test_helper'

class TestConfig < Minitest::Test
  def test_config_errors_name_the_setting_and_value
    [[{ concurrency: 0 }, 'concurrency', '0'], [{ concurrency: 'ten' }, 'concurrency', '"ten"'],
     [{ fetch: :turbo }, 'fetch', '"turbo"'], [{ queues: ['a,zero'] }, 'queues', '"a,zero"'],
     [{ shutdown_timeout: -1 }, 'shutdown_timeout', '-1'], [{ bogus: 1 }, 'setting', '"bogus"']].each do |settings, field, value|
      error = assert_raises(Cogworker::ConfigError) { Cogworker::Config.new(settings) }
      assert_equal [field, value], [error.field, error.value]
      assert_includes error.message, value
      assert_kind_of Cogworker::Error, error
    end
    # Issue #45, item 5: a misspelt setter in a configure block raised
    # NoMethodError; it is the ConfigError listing the settings, as Python's.
    error = assert_raises(Cogworker::ConfigError) { Cogworker::Config.new.concurency = 5 }
    assert_equal %w[setting "concurency"], [error.field, error.value]
    assert_includes error.message, 'concurrency'
    assert_raises(NoMethodError) { Cogworker::Config.new.concurency }
  end

  def test_an_orphan_threshold_shorter_than_two_heartbeats_is_refused
    Cogworker.reset! # the default 5 s heartbeat, whatever ran before
    error = assert_raises(Cogworker::ConfigError) { Cogworker.configure { |c| c.orphan_threshold = 2 } }
    assert_equal 'orphan_threshold', error.field
    assert_includes error.message, 'heartbeat_interval'
  ensure
    Cogworker.reset!
  end

  def test_unset_settings_read_as_their_defaults_and_every_setting_is_reachable
    config = Cogworker::Config.new
    assert_equal 10, config.concurrency
    assert_equal 25.0, config.shutdown_timeout
    config.history_max = 5
    config.dead_max_jobs = 7
    assert_equal [5, 7], [config.history_max, config.dead_max_jobs]
  end
end

class TestTestingModes < Minitest::Test
  def setup
    Jobs.reset
  end

  def teardown
    Cogworker::Testing.disable!
    Cogworker::Testing.clear
  end

  def test_one_version_and_an_extension_of_another_is_refused
    cargo = File.read(File.expand_path('../../Cargo.toml', __dir__))[/^version = "([^"]+)"/, 1]
    assert_equal cargo, Cogworker::VERSION
    error = assert_raises(LoadError) { Cogworker::Native.check_version('9.9.9', '/gems/cogworker_ext.so') }
    assert_match(/version 9\.9\.9 but its native module \(\/gems\/cogworker_ext\.so\) is version #{cargo}/, error.message)
    assert_nil Cogworker::Native.check_version(Cogworker::VERSION, 'here')
  end

  def test_fake_mode_records_and_drains
    Cogworker::Testing.fake! do
      jid = EchoJob.perform_async(1, 'two')
      EchoJob.perform_async(3)
      assert_equal 2, EchoJob.jobs.size
      assert_equal jid, EchoJob.jobs.first['jid']
      assert_equal [1, 'two'], EchoJob.jobs.first['args']
      EchoJob.perform_one
      assert_equal [[1, 'two']], Jobs.seen
      assert_equal 1, EchoJob.drain
      assert_empty EchoJob.jobs
      CriticalJob.perform_async('x')
      CriticalJob.clear
      assert_empty CriticalJob.jobs
    end
  end

  # Every push option is the core's, by name: a job class declares any of
  # them, checked where it is written; Time and Duration-like values work.
  def test_push_options_are_the_cores_and_are_checked_where_a_job_declares_them
    error = assert_raises(Cogworker::InvalidArgument) do
      Class.new { include Cogworker::Job }.class_eval { cogworker_options(limts: ['stripe']) }
    end
    assert_match(/limts/, error.message)
    limited = Class.new do
      include Cogworker::Job
      def self.name = 'LimitedJob'
      cogworker_options limits: ['stripe'], expires_in: 60
    end
    soon = Time.now + 3600
    Cogworker::Testing.fake! do
      limited.set(queue: :mail, keep_expired: true).perform_at(soon, 1)
      job = Cogworker::Testing.jobs_for('LimitedJob').last
      assert_equal ['mail', ['stripe'], true], job.values_at('queue', 'limits', 'keep_expired')
      assert_in_delta soon.to_f, job['at'], 0.01
      assert_operator job['expires_at'], :>, job['created_at'] + 59
      Cogworker::Testing.clear('LimitedJob')
    end
    assert_raises(Cogworker::InvalidJob) { Cogworker::Client.push('X', [], expires_at: 'tomorrow') }
  end

  def test_inline_mode_runs_at_push
    Cogworker::Testing.inline! { EchoJob.perform_async('now') }
    assert_equal [['now']], Jobs.seen
  end

  # What the benchmark and a spec_helper do: the testing entry point alone,
  # in a fresh process, with warnings on (no circular require).
  def test_requiring_cogworker_testing_alone_gives_modes_and_a_redis_server
    script = <<~RUBY
      require 'cogworker/testing'
      server = Cogworker::Testing::RedisServer.new
      Cogworker::Testing.fake! { puts server.cli('PING') }
      server.stop
    RUBY
    output = IO.popen(['ruby', '-w', '-I', File.expand_path('../lib', __dir__), '-e', script], err: %i[child out], &:read)
    assert $?.success?, output
    assert_equal "PONG\n", output
  end
end

# A durable push (min_replicas_acked): with no replica to confirm it, the
# push raises NotReplicated, a RedisError, and the job is queued.
class TestDurablePush < Minitest::Test
  include CogworkerTest

  def test_a_push_without_the_replicas_it_wants_raises_not_replicated
    config = Cogworker::Config.new(redis_url: @redis.url, min_replicas_acked: 1, replica_ack_timeout: 0.1)
    error = assert_raises(Cogworker::NotReplicated) { Cogworker::Client.new(config).push('A') }
    assert_kind_of Cogworker::RedisError, error
    assert_includes error.message, '0 of the 1 replica(s)'
    assert_equal 1, Cogworker::Api.new.queue('default')['size']
  end
end
