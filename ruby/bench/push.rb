# frozen_string_literal: true

# What one push costs from Ruby, one by one, each awaited, on a private
# redis-server: Client.push, perform_async, the native push alone and a
# status read (one round trip, no job built), ROUNDS times alternating.
# Run with `scripts/bench-push` (release build). Env: BENCH_JOBS (20000).
require 'cogworker'
require 'cogworker/testing'

JOBS = Integer(ENV.fetch('BENCH_JOBS', '20000'))
ROUNDS = 3

class PushBenchNoop
  include Cogworker::Job
  def perform; end
end

def timed(label)
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  JOBS.times { yield }
  seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
  printf("ruby   %-18s %8.0f calls/s %7.1f us each\n", label, JOBS / seconds, seconds / JOBS * 1e6)
end

server = Cogworker::Testing::RedisServer.new
Cogworker.configure { |c| c.redis_url = server.url }
native = Cogworker.config.native_client
options = Cogworker::Client.options({})
ROUNDS.times do
  timed('Client.push') { Cogworker::Client.push('PushBenchNoop', []) }
  timed('perform_async') { PushBenchNoop.perform_async }
  timed('native push') { native.push_many('PushBenchNoop', [[]], options, nil, nil) }
  timed('status') { native.status('none') }
  server.cli('FLUSHALL')
end
server.stop
