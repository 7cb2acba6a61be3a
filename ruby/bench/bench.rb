# frozen_string_literal: true

# Side by side, in one invocation: cogworker's Ruby worker against Sidekiq
# (Debian's ruby-sidekiq). Each gets its own private redis-server, the same
# no-op job (it writes a line to a FIFO the harness reads) and one worker
# process with 10 threads. Printed: enqueue jobs/s one by one and in bulk
# (1,000 per call), drain jobs/s, pickup p50/p99 on an idle worker (200
# single pushes), worker peak RSS, and the ratios. The systems alternate,
# BENCH_ROUNDS rounds (3), each round with per-job logging off on both sides
# (Sidekiq's logger at WARN, COGWORKER_LOG=warn) and then both at their
# defaults (a line per job on each side, written to /dev/null on each);
# a ratio compares runs of the same round and logging. BENCH_LAYOUT=sidekiq
# runs cogworker on Sidekiq's keys (docs/sidekiq.md).
#
# Run with `scripts/bench-ruby`.

HERE = __dir__
ROOT = File.expand_path('../..', HERE)
THREADS = 10

Result = Struct.new(:round, :logging, :system, :single, :bulk, :drain, :p50, :p99, :rss, keyword_init: true)

require_relative 'harness'

def run(system, jobs, logging)
  server = Server.new
  fifo = Fifo.new(File.join(server.dir, 'bench.fifo'))
  env = { 'BENCH_SYSTEM' => system, 'BENCH_FIFO' => fifo.path, 'REDIS_URL' => server.url,
          'COGWORKER_REDIS_URL' => server.url, 'BENCH_LOGGING' => logging,
          'COGWORKER_LOG' => logging == 'off' ? 'warn' : nil }
  env.each { |k, v| ENV[k] = v }
  load File.join(HERE, 'app.rb')
  # Each run has its own server: the clients of the harness are pointed at it.
  if system == 'sidekiq'
    Sidekiq.redis = { url: server.url }
  else
    Cogworker.reset!
    Cogworker.configure do |c|
      c.redis_url = server.url
      c.layout = ENV['BENCH_LAYOUT'] if ENV['BENCH_LAYOUT']
    end
  end
  noop, probe, push, push_bulk =
    if system == 'sidekiq'
      [SqNoop, SqProbe, ->(k, args) { Sidekiq::Client.push('class' => k, 'args' => args) },
       ->(k, list) { Sidekiq::Client.push_bulk('class' => k, 'args' => list) }]
    else
      [CwNoop, CwProbe, ->(k, args) { Cogworker::Client.push(k.name, args) },
       ->(k, list) { Cogworker::Client.push_bulk(k.name, list) }]
    end

  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  jobs.times { push.call(noop, []) }
  single = jobs / (Process.clock_gettime(Process::CLOCK_MONOTONIC) - started)
  server.cli('FLUSHALL')
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  (jobs / 1000).times { push_bulk.call(noop, Array.new(1000) { [] }) }
  bulk = jobs / (Process.clock_gettime(Process::CLOCK_MONOTONIC) - started)

  cmd = if system == 'sidekiq'
          ['sidekiq', '-r', File.join(HERE, 'app.rb'), '-c', THREADS.to_s]
        else
          ['ruby', '-I', File.join(ROOT, 'ruby/lib'), File.join(ROOT, 'ruby/exe/cogworker'), '-r',
           File.join(HERE, 'app.rb'), '-c', THREADS.to_s]
        end
  worker = Process.spawn(env, *cmd, out: File::NULL, err: File::NULL)
  sleep 0.001 while fifo.done.zero?
  first = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  sleep 0.001 while fifo.done < jobs
  drain = (jobs - 1) / (Process.clock_gettime(Process::CLOCK_MONOTONIC) - first)

  200.times do |i|
    push.call(probe, [Time.now.to_f])
    sleep(0.01 + (i % 7) * 0.002)
  end
  sleep 0.01 while fifo.latencies.size < 200
  latencies = fifo.latencies.sort
  rss = peak_rss_mb(worker)
  Process.kill('TERM', worker)
  Process.wait(worker)
  Result.new(logging: logging, system: system, single: single, bulk: bulk, drain: drain, p50: latencies[99],
             p99: latencies[197], rss: rss)
ensure
  fifo&.close
  server&.stop
end

jobs = Integer(ENV.fetch('BENCH_JOBS', '20000'))
rounds = Integer(ENV.fetch('BENCH_ROUNDS', '3'))
systems = ENV.fetch('BENCH_SYSTEMS', 'cogworker,sidekiq').split(',')
results = (1..rounds).flat_map do |round|
  %w[off default].flat_map do |logging|
    systems.map do |s|
      warn "bench: round #{round}, logging #{logging}: #{s} (#{jobs} jobs)..."
      run(s, jobs, logging).tap { |r| r.round = round }
    end
  end
end
puts '| round | per-job logging | system | enqueue 1-by-1 jobs/s | enqueue bulk jobs/s | drain jobs/s | ' \
     'cogworker drain ratio | pickup p50 / p99 ms | worker peak RSS MB |'
puts '|---|---|---|---|---|---|---|---|---|'
results.each do |r|
  ours = results.find { |o| o.system == 'cogworker' && o.round == r.round && o.logging == r.logging }
  ratio = ours ? format('%.2fx', ours.drain / r.drain) : '-'
  puts format('| %d | %s | %s | %d | %d | %d | %s | %.1f / %.1f | %.0f |', r.round, r.logging, r.system, r.single,
              r.bulk, r.drain, ratio, r.p50, r.p99, r.rss)
end
