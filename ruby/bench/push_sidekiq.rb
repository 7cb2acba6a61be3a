# frozen_string_literal: true

# One-by-one pushes, cogworker beside Sidekiq (Debian's ruby-sidekiq), to
# one private redis-server, interleaved in chunks of 500 so that every
# system sees the same minutes of a machine whose speed drifts: BENCH_JOBS
# (20000) each, over 3 rounds; median (range) of the rounds, jobs/s, and
# the ratio to Sidekiq's `Client.push` measured in the same chunks. No
# per-push output on either side (redis-rb 4.8's deprecation warning
# silenced). Run by `scripts/bench-push` when Sidekiq is installed.
require 'cogworker'
require 'cogworker/testing'
require 'sidekiq'
Redis.silence_deprecations = true

JOBS = Integer(ENV.fetch('BENCH_JOBS', '20000'))
server = Cogworker::Testing::RedisServer.new
Cogworker.configure { |c| c.redis_url = server.url }
Sidekiq.configure_client { |c| c.redis = { url: server.url } }

class SqNoop
  include Sidekiq::Worker
  def perform; end
end

class CwNoop
  include Cogworker::Job
  def perform; end
end

CHUNK = 500
PUSHES = {
  'sidekiq Client.push' => -> { Sidekiq::Client.push('class' => SqNoop, 'args' => []) },
  'cogworker Client.push' => -> { Cogworker::Client.push('CwNoop', []) },
  'sidekiq perform_async' => -> { SqNoop.perform_async },
  'cogworker perform_async' => -> { CwNoop.perform_async }
}.freeze

# Seconds each pusher spent on JOBS pushes, the pushers taking turns a
# chunk at a time, each chunk in a rotated order.
def round
  spent = Hash.new(0.0)
  (JOBS / CHUNK).times do |i|
    PUSHES.keys.rotate(i).each do |name|
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      CHUNK.times { PUSHES[name].call }
      spent[name] += Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    end
  end
  spent.transform_values { |seconds| JOBS / seconds }
end

PUSHES.each_value(&:call)
rounds = Array.new(3) do
  rates = round
  server.cli('FLUSHALL')
  rates
end
PUSHES.each_key do |name|
  low, median, high = rounds.map { |rates| rates[name] }.sort
  ratios = rounds.map { |rates| rates[name] / rates['sidekiq Client.push'] }.sort
  printf("%-24s %7.0f (%.0f-%.0f) jobs/s  %.2fx (%.2f-%.2f)\n", name, median, low, high, ratios[1], ratios[0], ratios[2])
end
server.stop
