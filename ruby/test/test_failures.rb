# frozen_string_literal: true

require_relative 'test_helper'

class TestFailures < Minitest::Test
  include CogworkerTest

  def test_failure_is_recorded_then_retried
    start_runner
    jid = FlakyJob.perform_async('k1')
    wait_for('ran twice') { Jobs.seen.count([:flaky, 'k1']) == 2 }
    attempts = wait_for('attempt') { Cogworker::Api.new.attempts(jid).then { |a| a.empty? ? nil : a } }
    assert_equal 'FlakyJob::Flake', attempts.first['error_class']
    assert_equal 'first attempt of k1 fails', attempts.first['error_message']
  end

  def test_exhausted_retries_land_in_dead_with_backtrace_and_utf8
    start_runner
    jid = AlwaysFailsJob.perform_async
    api = Cogworker::Api.new
    entry = wait_for('dead') { api.find('dead', jid) }
    job = entry['job']
    assert_equal 2, job['retry_count']
    assert_equal 'ArgumentError', job['error_class']
    assert_equal "always \uFFFD fails", job['error_message']
    assert(job['error_backtrace'].any? { |l| l.include?('jobs.rb') })
  end

  def test_garbage_payloads_are_buried_while_valid_jobs_flow
    start_runner
    garbage = ['not json', '[1,2]', '{"args":[]}']
    garbage.each do |raw|
      @redis.cli('LPUSH', 'cogworker:queue:default', raw)
      EchoJob.perform_async('ok')
    end
    api = Cogworker::Api.new
    wait_for('buried') { api.set_size('dead') == garbage.size }
    wait_for('valid ran') { Jobs.seen.count(['ok']) == garbage.size }
    assert_equal garbage.sort, api.entries('dead').map { |e| e['job']['raw_payload'] }.sort
  end

  def test_unknown_class_goes_to_retry
    start_runner
    jid = Cogworker::Client.push('No::Such::Job', [1])
    entry = wait_for('retry') { Cogworker::Api.new.find('retry', jid) }
    assert_equal 'cogworker::UnknownHandler', entry['job']['error_class']
  end

  def test_api_retry_delete_and_kill
    api = Cogworker::Api.new
    jids = Array.new(3) { EchoJob.perform_in(3600, 'later') }
    assert_equal 3, api.set_size('scheduled')
    entries = api.entries('scheduled')
    assert api.kill('scheduled', entries[0])
    assert api.delete('scheduled', entries[1])
    assert_equal 1, api.set_size('scheduled')
    assert_equal 1, api.set_size('dead')
    assert_equal 1, api.retry_all('scheduled')
    assert_equal 1, api.queues.find { |q| q['name'] == 'default' }['size']
    assert api.find('dead', entries[0]['job']['jid'])
    assert_equal 'dead', api.locate(entries[0]['job']['jid'])['set']
    assert_nil api.locate('nowhere')
    assert_equal 3, jids.uniq.size
  end
end
