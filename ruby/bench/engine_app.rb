# frozen_string_literal: true

# The jobs of `bench --hosts` (core/examples/bench/hosts.rs), the same as its
# Rust worker's: `Noop` does nothing; `Probe` records how long it waited to
# be picked up, and the list is printed on exit, as the Rust worker prints it.
# BENCH_PREFETCH=0 turns prefetch off (`bench --hosts --no-prefetch`).
require 'json'
require 'cogworker'

Cogworker.configure { |c| c.prefetch = false } if ENV['BENCH_PREFETCH'] == '0'

module EngineBench
  LATENCIES = []
  LOCK = Mutex.new
end

class Noop
  include Cogworker::Job
  def perform(*) = nil
end

class Probe
  include Cogworker::Job
  def perform(pushed_at)
    waited = Time.now.to_f - pushed_at
    EngineBench::LOCK.synchronize { EngineBench::LATENCIES << waited }
  end
end

at_exit { $stdout.puts "LATENCIES #{JSON.generate(EngineBench::LATENCIES)}" }
