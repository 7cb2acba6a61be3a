# Sidekiq 6.4's side of core/tests/sidekiq_layout.rs (Debian's
# ruby-sidekiq): the job classes a real `sidekiq -r` process runs, on the
# Redis that REDIS_URL names. Each records what it ran in the list
# `sidekiq_ran`, so the test reads it with no Ruby of its own.
require "sidekiq"
require "json"

Redis.silence_deprecations = true

Sidekiq.configure_server { |config| config.redis = {url: ENV.fetch("REDIS_URL")} }
# Look at the schedule and retry sets about every second (5 s by default,
# after a first wait of 10 to 15 s).
Sidekiq.options[:poll_interval_average] = 1
Sidekiq.configure_client { |config| config.redis = {url: ENV.fetch("REDIS_URL")} }

# Pushed by cogworker, run by Sidekiq.
class FromCogworker
  include Sidekiq::Worker

  def perform(*args)
    Sidekiq.redis { |conn| conn.rpush("sidekiq_ran", JSON.generate(["FromCogworker", jid, args])) }
  end
end

# Failed by cogworker once (its retry entry written by cogworker), then run
# here: Sidekiq counts the retry as the second.
class RetriedBySidekiq
  include Sidekiq::Worker

  def perform(*args)
    Sidekiq.redis do |conn|
      conn.rpush("sidekiq_ran", JSON.generate(["RetriedBySidekiq", jid, args]))
    end
  end
end
