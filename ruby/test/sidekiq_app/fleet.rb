# frozen_string_literal: true

# One app, two backends, as a migration has it: BACKEND=sidekiq loads
# Debian's sidekiq gem (run by `sidekiq -r`), anything else cogworker's
# Sidekiq API (run by `cogworker -r`): the gem swap, nothing else changed.
# For test_sidekiq.rb's migration; each run appends a line of JSON to the
# file RAN_FILE names: [kind, number, backend].
require 'json'
if ENV['BACKEND'] == 'sidekiq'
  require 'sidekiq'
  Redis.silence_deprecations = true
  # The schedule and retry sets looked at about every second.
  Sidekiq.options[:poll_interval_average] = 1
else
  require 'cogworker/sidekiq'
  Cogworker.config.sidekiq_version = 6
end

BACKEND = ENV['BACKEND'] == 'sidekiq' ? 'sidekiq' : 'cogworker'

def record(kind, number)
  File.open(ENV.fetch('RAN_FILE'), 'a') { |file| file.puts(JSON.generate([kind, number, BACKEND])) }
end

Sidekiq.configure_server { |config| config.redis = { url: ENV.fetch('REDIS_URL') } }
Sidekiq.configure_client { |config| config.redis = { url: ENV.fetch('REDIS_URL') } }

class Work
  include Sidekiq::Job

  def perform(number)
    sleep 0.01
    record('work', number)
  end
end

class Later
  include Sidekiq::Job

  def perform(number) = record('later', number)
end

# Fails on its first run (a marker file per number), then succeeds.
class FailOnce
  include Sidekiq::Job
  sidekiq_options retry: 5
  sidekiq_retry_in { |_count, _error| 1 }

  def perform(number)
    marker = File.join(File.dirname(ENV.fetch('RAN_FILE')), "failed-#{number}")
    if File.exist?(marker)
      record('fail_once', number)
    else
      File.write(marker, BACKEND)
      raise "first run of #{number}"
    end
  end
end

# `ruby fleet.rb push FIRST COUNT`: COUNT of each kind, numbered from FIRST.
if ARGV.first == 'push'
  first, count = ARGV[1].to_i, ARGV[2].to_i
  (first...first + count).each do |n|
    Work.perform_async(n)
    Later.perform_in(1 + (n % 3), n)
    FailOnce.perform_async(n)
  end
end
