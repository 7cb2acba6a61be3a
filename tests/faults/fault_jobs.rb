# frozen_string_literal: true

# The Ruby worker of the fault suite: `Account(token, millis, fail_once)`
# sleeps, then appends `token` to TEST_RESULTS_FILE (one line per
# execution); with `fail_once`, the first attempt anywhere (the one that
# creates the token's file in TEST_FAIL_DIR) fails instead, retried in 0.2 s.
Cogworker.configure do |c|
  c.orphan_threshold = Float(ENV.fetch('TEST_ORPHAN_THRESHOLD', '300'))
  c.orphan_check_interval = Float(ENV.fetch('TEST_ORPHAN_CHECK', '0.5'))
  c.heartbeat_interval = Float(ENV.fetch('TEST_HEARTBEAT', '0.5'))
  c.scheduler_poll_interval = 0.2
  c.fetch_idle_max_interval = 0.5
  c.shutdown_timeout = 5.0
  c.shard_by_queue = ENV['TEST_SHARD_BY_QUEUE'] == '1'
  c.namespace = ENV.fetch('TEST_NAMESPACE', 'cogworker')
  # TEST_LAYOUT=sidekiq: on Sidekiq 6's keys (tests/sidekiq).
  c.layout = ENV.fetch('TEST_LAYOUT', 'cogworker')
  c.sidekiq_version = 6
end

# `fail_once` jobs: does this attempt fail? Only the first, in any process:
# the one that creates the token's file in TEST_FAIL_DIR.
module FailOnce
  def self.first_attempt?(token)
    dir = ENV.fetch('TEST_FAIL_DIR', nil)
    return false unless dir

    File.open(File.join(dir, token), File::WRONLY | File::CREAT | File::EXCL).close
    true
  rescue Errno::EEXIST
    false
  end
end

class Account
  include Cogworker::Job

  cogworker_retry_in { |_count, _error| 0.2 }

  def perform(token, millis = 0, fail_once = false)
    sleep(millis / 1000.0)
    raise 'the first attempt fails' if fail_once && FailOnce.first_attempt?(token)

    File.open(ENV.fetch('TEST_RESULTS_FILE'), 'a') { |f| f.write("#{token}\n") }
    # With TEST_RUNS_FILE: which delivery ran, to tell a job delivered
    # twice from one pushed twice.
    runs = ENV.fetch('TEST_RUNS_FILE', nil)
    File.open(runs, 'a') { |f| f.write(format("%s %s ruby %d %.6f\n", token, jid, Process.pid, Time.now.to_f)) } if runs
  end
end

# `start`/`end` lines around a sleep: how many ran at once, and where.
# With `fail_once`, the first attempt anywhere fails after its sleep (no
# `end` line), retried in 0.2 s.
class Span
  include Cogworker::Job

  cogworker_retry_in { |_count, _error| 0.2 }

  def perform(token, millis, fail_once = false)
    line("start #{token} #{format('%.6f', Time.now.to_f)} #{Process.pid}")
    sleep(millis / 1000.0)
    raise 'the first attempt fails' if fail_once && FailOnce.first_attempt?(token)

    line("end #{token} #{format('%.6f', Time.now.to_f)} #{Process.pid}")
  end

  private

  def line(text) = File.open(ENV.fetch('TEST_RESULTS_FILE'), 'a') { |f| f.write("#{text}\n") }
end

# A long job (docs/long-jobs.md) over items 0...total from its cursor: per
# item, `item <i> <pid>` in TEST_RESULTS_FILE, a spin of `micros`, then a
# checkpoint of i + 1; once stopping, `stopped <cursor> <pid>`, then it
# interrupts itself and returns.
class Import
  include Cogworker::Job

  def perform(total, micros = 0)
    position = cursor || 0
    File.open(ENV.fetch('TEST_RESULTS_FILE'), 'a') do |out|
      out.sync = true
      while position < total
        if stopping?
          out.write("stopped #{position} #{Process.pid}\n")
          return interrupt!
        end
        out.write("item #{position} #{Process.pid}\n")
        spin_until = Process.clock_gettime(Process::CLOCK_MONOTONIC) + (micros / 1e6)
        nil while Process.clock_gettime(Process::CLOCK_MONOTONIC) < spin_until
        position += 1
        checkpoint(position)
      end
    end
  end
end

# Always fails (RuntimeError "boom"), as tests/sidekiq's Sidekiq process
# fails its own Fail: the two failures are compared there.
class Fail
  include Cogworker::Job

  def perform(*)
    raise 'boom'
  end
end
