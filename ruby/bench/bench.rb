# frozen_string_literal: true

# Side by side, in one invocation: cogworker's Ruby worker against Sidekiq
# (Debian's ruby-sidekiq). Each gets its own private redis-server, the same
# no-op job (it writes a line to a FIFO the harness reads) and one worker
# process with 10 threads. Printed: enqueue jobs/s one by one and in bulk
# (1,000 per call), drain jobs/s, pickup p50/p99 on an idle worker (200
# single pushes), worker peak RSS, and the ratios.
#
# Run with `scripts/bench-ruby`.

HERE = __dir__
ROOT = File.expand_path('../..', HERE)
THREADS = 10

Result = Struct.new(:system, :single, :bulk, :drain, :p50, :p99, :rss, keyword_init: true)

require_relative 'harness'

def run(system, jobs)
  server = Server.new
  fifo = Fifo.new(File.join(server.dir, 'bench.fifo'))
  env = { 'BENCH_SYSTEM' => system, 'BENCH_FIFO' => fifo.path, 'REDIS_URL' => server.url,
          'COGWORKER_REDIS_URL' => server.url }
  env.each { |k, v| ENV[k] = v }
  load File.join(HERE, 'app.rb')
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
  Result.new(system: system, single: single, bulk: bulk, drain: drain, p50: latencies[99],
             p99: latencies[197], rss: rss)
ensure
  fifo&.close
  server&.stop
end

jobs = Integer(ENV.fetch('BENCH_JOBS', '20000'))
systems = ENV.fetch('BENCH_SYSTEMS', 'cogworker,sidekiq').split(',')
results = systems.map do |s|
  warn "bench: #{s} (#{jobs} jobs)..."
  run(s, jobs)
end
ours = results.find { |r| r.system == 'cogworker' }
puts '| system | enqueue 1-by-1 jobs/s | enqueue bulk jobs/s | drain jobs/s | cogworker drain ratio | ' \
     'pickup p50 / p99 ms | worker peak RSS MB |'
puts '|---|---|---|---|---|---|---|'
results.each do |r|
  ratio = ours ? format('%.1fx', ours.drain / r.drain) : '-'
  puts format('| %s | %d | %d | %d | %s | %.1f / %.1f | %.0f |', r.system, r.single, r.bulk, r.drain, ratio,
              r.p50, r.p99, r.rss)
end
