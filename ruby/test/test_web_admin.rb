# frozen_string_literal: true

require_relative 'test_helper'
require 'net/http'
require 'open3'

# `cogworker web` and the admin commands as real processes.
class TestWebAdmin < Minitest::Test
  include CogworkerTest
  EXE = File.expand_path('../exe/cogworker', __dir__)

  def cli(*args)
    Open3.capture3({ 'COGWORKER_REDIS_URL' => @redis.url }, 'ruby', EXE, *args)
  end

  def test_web_serves_the_dashboard_until_term
    env = { 'COGWORKER_REDIS_URL' => @redis.url, 'COGWORKER_WEB_AUTH' => 'ops:pa55' }
    out, writer = IO.pipe
    pid = spawn_child(env, 'ruby', EXE, 'web', '--port', '0', out: writer, err: File::NULL)
    writer.close
    line = out.gets
    assert_match %r{\Acogworker web: http://127\.0\.0\.1:\d+/}, line
    uri = URI(line.split(': ', 2).last.strip)
    assert_equal '401', Net::HTTP.get_response(uri).code
    request = Net::HTTP::Get.new(uri)
    request.basic_auth('ops', 'pa55')
    response = Net::HTTP.start(uri.host, uri.port) { |http| http.request(request) }
    assert_equal '200', response.code
    assert_includes response.body, 'Dashboard'
  ensure
    if pid
      Process.kill('TERM', pid)
      _, status = Process.wait2(pid)
      assert status.success?
    end
    out&.close
  end

  def test_metrics_serves_prometheus_text_alone_to_the_hosts_it_knows
    start_runner(concurrency: 1)
    refute_nil Cogworker::Client.push('EchoJob', ['x'])
    _, err, status = cli('metrics', '--host', '0.0.0.0', '--port', '0')
    assert_equal 2, status.exitstatus, 'an open address needs --auth'
    assert_match(/--auth/, err)
    out, writer = IO.pipe
    pid = spawn_child({ 'COGWORKER_REDIS_URL' => @redis.url }, 'ruby', EXE, 'metrics', '--host', '0.0.0.0',
                      '--port', '0', '--insecure-no-auth', out: writer, err: File::NULL)
    writer.close
    url = out.gets.to_s[%r{http://\S+/metrics}]
    refute_nil url, 'it prints where it serves'
    uri = URI(url.sub('0.0.0.0', '127.0.0.1'))
    wait_for('the job counted') { Net::HTTP.get(uri).include?('cogworker_jobs_processed_total{queue="default",class="EchoJob"} 1') }
    response = Net::HTTP.get_response(uri)
    assert_equal 'text/plain; version=0.0.4; charset=utf-8', response['content-type']
    assert_equal 'nosniff', response['x-content-type-options']
    index = Net::HTTP.get_response(URI(uri.to_s.sub('/metrics', '/')))
    assert_equal ['200', "cogworker metrics: Prometheus metrics at /metrics\n"], [index.code, index.body], 'no dashboard'
    foreign = Net::HTTP.start(uri.host, uri.port) { |http| http.get('/metrics', 'Host' => "evil.example:#{uri.port}") }
    assert_equal '403', foreign.code
    Process.kill('TERM', pid)
    assert exit_status(pid).success?
  end

  def test_a_password_on_the_command_line_is_warned_of
    _, err, status = cli('queues', '--redis-url', @redis.url.sub('redis://', 'redis://:pw@'))
    assert_includes err, '--redis-url puts a password on the command line'
    assert_includes err, 'COGWORKER_REDIS_URL_FILE'
    _, err, status = cli('queues', '--redis-url', @redis.url)
    assert status.success?, err
    refute_includes err, 'command line'
  end

  def test_web_refuses_an_open_address_without_credentials_unless_told
    _, err, status = cli('web', '--host', '0.0.0.0', '--port', '0')
    assert_equal 2, status.exitstatus, err
    assert_match(/--auth/, err)
    env = { 'COGWORKER_REDIS_URL' => @redis.url }
    out, writer = IO.pipe
    log_r, log_w = IO.pipe
    pid = spawn_child(env, 'ruby', EXE, 'web', '--host', '0.0.0.0', '--port', '0', '--insecure-no-auth',
                      '--allowed-host', 'jobs.example.com', out: writer, err: log_w)
    writer.close
    log_w.close
    port = Integer(out.gets[%r{:(\d+)/}, 1])
    get = lambda do |host|
      Net::HTTP.start('127.0.0.1', port) { |http| http.get('/', 'Host' => host) }
    end
    assert_equal '200', get.call('jobs.example.com').code
    refused = get.call("evil.example:#{port}")
    assert_equal '403', refused.code
    assert_includes refused.body, '--allowed-host'
  ensure
    if pid
      Process.kill('TERM', pid)
      _, status = Process.wait2(pid)
      assert status.success?
      assert_match(/WITHOUT credentials/, log_r.read)
    end
    out&.close
    log_r&.close
  end

  def test_admin_output_shows_terminal_escapes_as_text
    hostile = "mail\e]0;pwned\a\e[2J"
    @redis.cli('SADD', 'cogworker:queues', hostile)
    @redis.cli('LPUSH', "cogworker:queue:#{hostile}", JSON.generate('class' => 'X', 'args' => []))
    out, = cli('queues')
    refute_match(/[\e\a]/, out)
    assert_includes out, 'mail\\u{1b}]0;pwned\\u{7}\\u{1b}[2J'
  end

  def test_admin_commands
    Cogworker::Client.push('Some::Job', [1])
    @redis.cli('ZADD', 'cogworker:dead', '1', JSON.generate('class' => 'Dead::Job', 'args' => [], 'queue' => 'default', 'jid' => 'd' * 24))
    stats, = cli('stats')
    assert_match(/dead\s+1/, stats)
    assert_match(/default\s+1\s/, cli('queues').first)
    cli('pause', 'default')
    assert_match(/paused/, cli('queues').first)
    cli('unpause', 'default')
    assert_equal "retried 1 job(s) from dead\n", cli('retry-all', 'dead').first
    assert_equal "deleted 2 job(s) from queue default\n", cli('clear-queue', 'default').first
    _, err, status = cli('clear', 'nowhere')
    assert_equal 2, status.exitstatus
    assert_match(/invalid argument set = "nowhere"/, err)
    _, err, status = cli('web', '--port', @redis.port.to_s)
    assert_equal 2, status.exitstatus, err
    assert_match(/web\.bind/, err)
  end
end
