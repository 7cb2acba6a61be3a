# Sidekiq 6.4's side (Debian's ruby-sidekiq) of tests/sidekiq: the job
# classes a real `sidekiq -r accounts.rb` process runs, the same classes
# and arguments the fault suite's cogworker workers run in three languages
# (tests/faults: fault_tasks.py, fault_jobs.rb, examples/test_worker.rs):
# - Account(token, millis, fail_once): sleeps, appends the token to
#   TEST_RESULTS_FILE; with fail_once the first attempt anywhere (the one
#   that creates the token's file in TEST_FAIL_DIR) fails instead;
# - Fail: always fails (RuntimeError "boom").
# REDIS_URL names the Redis.
require "sidekiq"
require "json"

Redis.silence_deprecations = true
Sidekiq.configure_server { |config| config.redis = {url: ENV.fetch("REDIS_URL")} }
Sidekiq.configure_client { |config| config.redis = {url: ENV.fetch("REDIS_URL")} }
# The schedule and retry sets looked at about every second.
Sidekiq.options[:poll_interval_average] = 1

class Account
  include Sidekiq::Worker
  # Sidekiq adds up to 9 s of jitter on the first retry.
  sidekiq_retry_in { |_count, _error| 1 }

  def perform(token, millis = 0, fail_once = false)
    if fail_once && first_attempt?(token)
      raise "first attempt of #{token}"
    end

    sleep(millis / 1000.0)
    File.open(ENV.fetch("TEST_RESULTS_FILE"), "a") { |file| file.write("#{token}\n") }
  end

  def first_attempt?(token)
    File.open(File.join(ENV.fetch("TEST_FAIL_DIR"), token), File::WRONLY | File::CREAT | File::EXCL).close
    true
  rescue Errno::EEXIST
    false
  end
end

class Fail
  include Sidekiq::Worker

  def perform(*)
    raise "boom"
  end
end
