# frozen_string_literal: true

require_relative 'test_helper'

class TestConfig < Minitest::Test
  def test_config_errors_name_the_setting_and_value
    [[{ concurrency: 0 }, %w[concurrency 0]], [{ concurrency: 'ten' }, ['concurrency', '"ten"']],
     [{ fetch: :turbo }, %w[fetch turbo]], [{ queues: ['a,zero'] }, %w[queues a,zero]],
     [{ shutdown_timeout: -1 }, %w[shutdown_timeout -1]], [{ bogus: 1 }, %w[bogus]]].each do |settings, words|
      error = assert_raises(Cogworker::ConfigError) { Cogworker::Config.new(settings) }
      words.each { |w| assert_includes error.message, w }
      assert_kind_of Cogworker::Error, error
    end
  end

  def test_non_json_args_are_refused
    Cogworker::Testing.disable!
    assert_raises(Cogworker::InvalidJob) { Cogworker.encode(Cogworker.payload('A', ["\xff".b])) }
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

  def test_inline_mode_runs_at_push
    Cogworker::Testing.inline! { EchoJob.perform_async('now') }
    assert_equal [['now']], Jobs.seen
  end
end
