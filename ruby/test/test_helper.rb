# frozen_string_literal: true

# Every test that needs Redis gets a private redis-server on a free loopback
# port, stopped by pid.
$LOAD_PATH.unshift(File.expand_path('../lib', __dir__), __dir__)
require 'minitest/autorun'
require 'tmpdir'
require 'fileutils'
require 'cogworker'
require 'cogworker/cli'
require 'jobs'
require 'waiting'

Cogworker.logger.level = Logger::WARN
# This process's engine logs warnings and worse (not a line per job); the
# workers the tests start log as usual.
previous_level = ENV.fetch('COGWORKER_LOG', nil)
ENV['COGWORKER_LOG'] = 'warn'
Cogworker::Native.init_logging(false)
ENV['COGWORKER_LOG'] = previous_level

RedisServer = Cogworker::Testing::RedisServer

module CogworkerTest
  include Waiting

  # What `queue` (a Queue jobs record into) holds now, left in it.
  def queued(queue)
    found = []
    found << queue.pop until queue.empty?
    found.each { |item| queue << item }
    found
  end

  FAST = { heartbeat_interval: 0.5, scheduler_poll_interval: 0.2, orphan_check_interval: 0.5,
           fetch_idle_max_interval: 0.5, shutdown_timeout: 5.0 }.freeze

  def setup
    super
    Jobs.reset
    Cogworker::Testing.disable!
    @redis = RedisServer.new
    Cogworker.reset!
    Cogworker.configure do |c|
      c.redis_url = @redis.url
      FAST.each { |k, v| c[k] = v }
    end
    @runners = []
    @children = []
  end

  def teardown
    kill_leftover_children
    @runners.each do |r|
      r.stop
      assert r.wait(15), 'worker did not stop'
      r.join
    end
    @redis&.stop
    super
  end

  def start_runner(**overrides)
    runner = Cogworker::Runner.new(Cogworker.config.merge(overrides))
    @runners << runner
    runner.start
  end

  # Process.spawn that teardown cleans up: a child the test did not reap
  # (an assertion failed before it stopped the worker) is killed, so no
  # worker outlives its test.
  def spawn_child(*args, **options)
    pid = Process.spawn(*args, **options)
    @children << pid
    pid
  end

  def kill_leftover_children
    @children.each do |pid|
      # nil: still running and ours. ECHILD: the test reaped it already, so
      # the pid may belong to someone else now and must not be signalled.
      next unless Process.wait(pid, Process::WNOHANG).nil?

      Process.kill('KILL', pid)
      Process.wait(pid)
    rescue Errno::ECHILD, Errno::ESRCH
      next
    end
  end
end
