# frozen_string_literal: true

# One-by-one pushes, cogworker beside Sidekiq (Debian's ruby-sidekiq), to
# one private redis-server, alternating, 3 rounds of BENCH_JOBS (20000):
# median (range) jobs/s. No per-push output on either side (redis-rb 4.8's
# deprecation warning silenced). Run by `scripts/bench-push` when Sidekiq
# is installed.
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

def timed
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  JOBS.times { yield }
  JOBS / (Process.clock_gettime(Process::CLOCK_MONOTONIC) - started)
end

rows = Hash.new { |h, k| h[k] = [] }
3.times do
  rows['sidekiq Client.push'] << timed { Sidekiq::Client.push('class' => SqNoop, 'args' => []) }
  rows['cogworker Client.push'] << timed { Cogworker::Client.push('CwNoop', []) }
  rows['sidekiq perform_async'] << timed { SqNoop.perform_async }
  rows['cogworker perform_async'] << timed { CwNoop.perform_async }
  server.cli('FLUSHALL')
end
rows.each do |name, rates|
  low, median, high = rates.sort
  printf("%-24s %7.0f (%.0f-%.0f) jobs/s\n", name, median, low, high)
end
server.stop
