# frozen_string_literal: true

module Cogworker
  # A rate limiter shared by every process that uses its name, in any
  # language (docs/rate-limits.md):
  #
  #   ERP = Cogworker::Limiter.concurrent('erp', 5)
  #   STRIPE = Cogworker::Limiter.window('stripe', 100, :second)
  #   ERP.within_limit { sync_invoice(id) }
  #
  # `within_limit` runs its block once the limiter gives capacity, waiting
  # up to `wait:` (5 s unless told), and raises Cogworker::OverLimit if
  # none came; a concurrent limiter's place is held until the block ends,
  # however it ends. The definition is checked here and written to Redis
  # when the limiter is made (on first use if Redis cannot be reached
  # then). `interval`: seconds, a Duration, or :second, :minute, :hour, :day.
  class Limiter
    def self.concurrent(name, limit, lease_ttl: nil, wait: nil, client: nil)
      new('concurrent', name, limit, { 'lease_ttl' => lease_ttl, 'wait' => wait }, client)
    end

    def self.bucket(name, limit, interval, wait: nil, client: nil)
      new('bucket', name, limit, { 'interval' => interval, 'wait' => wait }, client)
    end

    def self.window(name, limit, interval, wait: nil, client: nil)
      new('window', name, limit, { 'interval' => interval, 'wait' => wait }, client)
    end

    def self.leaky(name, limit, interval, wait: nil, client: nil)
      new('leaky', name, limit, { 'interval' => interval, 'wait' => wait }, client)
    end

    def initialize(kind, name, limit, options, client = nil)
      @native = Native::Limiter.new((client || Cogworker.client).native, kind, name.to_s, limit, options)
    end

    def name = @native.name

    def inspect = "#<Cogworker::Limiter #{@native.kind} #{@native.name} limit=#{@native.limit}>"

    # Takes capacity (see the class); release the lease when done.
    def acquire(wait: nil)
      @native.acquire(wait)
    end

    def within_limit(wait: nil)
      lease = acquire(wait: wait)
      begin
        yield
      ensure
        lease.release
      end
    end
  end
end
