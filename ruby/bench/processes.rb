# frozen_string_literal: true

# CPU-bound Ruby handlers with `cogworker -p N`: N jobs that each burn about
# 5 ms of pure-Ruby CPU (holding the GVL), drained by one worker process
# (`-p 1`) and by two (`-p 2`). Printed per run: jobs/s from the first job
# done to the last (start-up excluded), wall time from starting the worker
# (start-up included) and peak RSS of the parent and its children. All jobs
# are pushed before the worker starts.
#
# Run: `ruby -I ruby/lib ruby/bench/processes.rb` (after `scripts/bench-ruby` built the
# release extension). BENCH_CPU_JOBS (default 2000) sets N.

HERE = __dir__
require_relative 'harness'
require File.join(ROOT, 'ruby/lib/cogworker')
load File.join(HERE, 'app.rb')

JOBS = Integer(ENV.fetch('BENCH_CPU_JOBS', '2000'))

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

# The rounds of bench_burn that take about 5 ms here.
def calibrate
  rounds = 10_000
  loop do
    started = now
    bench_burn(rounds)
    took = now - started
    return (rounds * 0.005 / took).to_i if took > 0.05

    rounds *= 2
  end
end

def family_rss_mb(pid)
  children = `pgrep -P #{pid}`.split.map(&:to_i)
  ([pid] + children).sum { |p| peak_rss_mb(p) }
end

def run(processes, rounds)
  server = Server.new
  fifo = Fifo.new(File.join(server.dir, 'bench.fifo'))
  env = { 'BENCH_SYSTEM' => 'cogworker', 'BENCH_FIFO' => fifo.path, 'COGWORKER_REDIS_URL' => server.url }
  Cogworker::Client.new(Cogworker::Config.new(redis_url: server.url)).push_bulk('CwBurn', Array.new(JOBS) { [rounds] })
  cmd = ['ruby', '-I', File.join(ROOT, 'ruby/lib'), File.join(ROOT, 'ruby/exe/cogworker'), '-r',
         File.join(HERE, 'app.rb'), '-c', '4', '-p', processes.to_s]
  started = now
  worker = Process.spawn(env, *cmd, out: File::NULL, err: File::NULL)
  sleep 0.01 while fifo.done.zero?
  first = [now, fifo.done]
  peak = 0.0
  polls = 0
  # Light polling: the harness must not take CPU from the workers.
  while fifo.done < JOBS
    peak = [peak, family_rss_mb(worker)].max if (polls % 50) == 25
    polls += 1
    sleep 0.01
  end
  finished = now
  Process.kill('TERM', worker)
  Process.wait(worker)
  [(JOBS - first[1]) / (finished - first[0]), finished - started, peak]
ensure
  fifo&.close
  server&.stop
end

rounds = calibrate
puts "#{JOBS} jobs x ~5 ms of pure-Ruby CPU (#{rounds} rounds), -c 4, #{`nproc`.strip} cores"
puts format('%-10s %8s %8s %7s %9s', 'processes', 'jobs/s', 'wall s', 'RSS MB', 'speed-up')
base = nil
[1, 2].each do |processes|
  rate, wall, peak = run(processes, rounds)
  base ||= rate
  puts format('-p %-7d %8.0f %8.2f %7.0f %8.2fx', processes, rate, wall, peak, rate / base)
end
