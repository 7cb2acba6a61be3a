# frozen_string_literal: true

# Pushes numbered jobs one by one until SIGTERM (or the deadline), and
# appends each token whose push returned to a file: the Ruby producer of
# the failover soak. `ruby push_stream.rb PREFIX FILE`, Redis from
# COGWORKER_REDIS_URL, STREAM_MIN_REPLICAS_ACKED, STREAM_DURABLE_BY, STREAM_NAMESPACE,
# STREAM_PAUSE_MS and STREAM_SECONDS as core/examples/push_stream.rs reads
# them. A failed push
# is not retried: its token is not written.
require 'cogworker'

prefix, path = ARGV
stopping = false
Signal.trap('TERM') { stopping = true }
replicas = Integer(ENV.fetch('STREAM_MIN_REPLICAS_ACKED', '0'))
# Each push asks for its replicas itself, or the client's setting does.
per_push = ENV['STREAM_DURABLE_BY'] == 'push' ? { min_replicas_acked: replicas } : {}
settings = { redis_url: ENV.fetch('COGWORKER_REDIS_URL') }
settings[:min_replicas_acked] = replicas if per_push.empty?
settings[:namespace] = ENV.fetch('STREAM_NAMESPACE') if ENV.key?('STREAM_NAMESPACE')
config = Cogworker::Config.new(**settings)
client = Cogworker::Client.new(config)
pause = Integer(ENV.fetch('STREAM_PAUSE_MS', '2')) / 1000.0
deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + Integer(ENV.fetch('STREAM_SECONDS', '600'))
pushed = failed = 0
File.open(path, 'a') do |out|
  n = 0
  until stopping || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    token = format('%<prefix>s%<n>08d', prefix: prefix, n: n)
    n += 1
    begin
      client.push('Account', [token, 0], **per_push)
      out.puts(token)
      pushed += 1
    rescue Cogworker::RedisError
      failed += 1
    end
    sleep(pause)
  end
end
puts "pushed #{pushed}, failed #{failed}"
