# frozen_string_literal: true

module Cogworker
  # The ops API: queues, the scheduled/retry/dead sets, processes, stats.
  # Set names: 'scheduled', 'retry', 'dead'.
  class Api
    def initialize(config = Cogworker.config)
      @native = Native::Api.new(config.to_h)
    end

    def queues = JSON.parse(@native.queues_json)
    def pause_queue(name) = @native.pause_queue(name.to_s)
    def unpause_queue(name) = @native.unpause_queue(name.to_s)
    def clear_queue(name) = @native.clear_queue(name.to_s)
    def set_size(set) = @native.set_size(set.to_s)

    # A page of a set, latest first: hashes with 'score', 'payload' and 'job'.
    def entries(set, start = 0, count = 50)
      JSON.parse(@native.set_page_json(set.to_s, start, count)).map { |e| with_job(e) }
    end

    def find(set, jid)
      found = @native.find_json(set.to_s, jid)
      found && with_job(JSON.parse(found))
    end

    def retry_now(set, entry) = @native.retry_now(set.to_s, entry['payload'], entry['score'])
    def retry_all(set) = @native.retry_all(set.to_s)
    def clear_set(set) = @native.clear_set(set.to_s)
    def delete(set, entry) = @native.delete(set.to_s, entry['payload'], entry['score'])
    def kill(set, entry) = @native.kill(set.to_s, entry['payload'], entry['score'])
    def processes = JSON.parse(@native.processes_json)
    def quiet_process(identity) = @native.quiet_process(identity)
    def stop_process(identity) = @native.stop_process(identity)

    # Totals, or for one UTC day ('yyyy-mm-dd').
    def stats(day = nil)
      processed, failed = @native.stats(day)
      { 'processed' => processed, 'failed' => failed }
    end

    def attempts(jid) = @native.attempts(jid).map { |a| JSON.parse(a) }

    # Held unique-job locks: hashes with 'digest', 'jid' (the owner), 'ttl'.
    def unique_locks(limit = 1000) = JSON.parse(@native.unique_locks_json(limit))

    # Removes a unique lock so a job with that digest can be pushed again.
    def clear_unique_lock(digest) = @native.clear_unique_lock(digest.to_s)

    # Periodic entries of the live processes, with 'last_slot' and 'running'.
    def periodic = JSON.parse(@native.periodic_json)

    private

    def with_job(entry)
      entry.merge('job' => (JSON.parse(entry['payload']) rescue nil)) # rubocop:disable Style/RescueModifier
    end
  end
end
