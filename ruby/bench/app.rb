# frozen_string_literal: true

# The same no-op job for both systems. A handler only writes a line to the
# harness's FIFO (BENCH_FIFO): "d" when done, or, for a latency probe, how
# long the job waited to be picked up. No Redis command, about a microsecond.
# Pure-Ruby CPU work that holds the GVL throughout.
def bench_burn(rounds)
  total = 0
  rounds.times { |i| total += i * i % 7 }
  total
end

module BenchFifo
  @lock = Mutex.new
  def self.write(line)
    @io ||= @lock.synchronize { @io || File.open(ENV.fetch('BENCH_FIFO'), 'w').tap { |f| f.sync = true } }
    @io.write(line) # one write(2) of a few bytes: atomic
  end
end

case ENV.fetch('BENCH_SYSTEM', nil)
when 'sidekiq'
  require 'sidekiq'
  # redis-rb 4.8 warns on stderr at every Sidekiq push (Redis#sadd's return
  # type): equal terms mean no per-push output on either side.
  Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)
  # BENCH_LOGGING=off: no line per job (cogworker gets COGWORKER_LOG=warn
  # from the harness); default: each at its default level (Sidekiq's INFO
  # logs each job's start and end, as cogworker's default does).
  Sidekiq.configure_server { |config| config.logger.level = Logger::WARN } if ENV['BENCH_LOGGING'] == 'off'
  class SqNoop
    include Sidekiq::Worker
    sidekiq_options retry: false
    def perform = BenchFifo.write("d\n")
  end

  class SqProbe
    include Sidekiq::Worker
    sidekiq_options retry: false
    def perform(pushed_at) = BenchFifo.write(format("l %.3f\n", (Time.now.to_f - pushed_at) * 1000))
  end
when 'cogworker'
  require 'cogworker'
  # BENCH_LAYOUT=sidekiq: on Sidekiq's keys, as a drop-in (docs/sidekiq.md).
  Cogworker.configure { |c| c.layout = ENV['BENCH_LAYOUT'] } if ENV['BENCH_LAYOUT']
  class CwNoop
    include Cogworker::Job
    def perform = BenchFifo.write("d\n")
  end

  class CwBurn
    include Cogworker::Job
    def perform(rounds)
      bench_burn(rounds)
      BenchFifo.write("d\n")
    end
  end

  class CwProbe
    include Cogworker::Job
    def perform(pushed_at) = BenchFifo.write(format("l %.3f\n", (Time.now.to_f - pushed_at) * 1000))
  end
end
