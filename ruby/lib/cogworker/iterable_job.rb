# frozen_string_literal: true

module Cogworker
  # A long job in Sidekiq's IterableJob shape (docs/long-jobs.md): define
  # `build_enumerator(*args, cursor:)`, an Enumerator of `[item, cursor]`
  # pairs (the cursor to resume from after that item), and
  # `each_iteration(item, *args)`:
  #
  #   class ImportRows
  #     include Cogworker::IterableJob
  #     def build_enumerator(path, cursor:) = array_enumerator(load(path), cursor: cursor)
  #     def each_iteration(row, _path) = save(row)
  #   end
  #
  # After each item the engine saves the cursor (coalesced) and decides,
  # once for every language, whether to go on: between items the job stops
  # when its worker shuts down, its time limit is near, it was cancelled
  # (`cancel!`), or this run has lasted `max_iteration_runtime` seconds; it
  # then goes back on its queue with its cursor, not as a failure. The
  # callbacks `on_start`, `on_resume`, `on_stop`, `on_complete` and
  # `around_iteration` are Sidekiq's.
  module IterableJob
    def self.included(base)
      base.include(Cogworker::Job)
    end

    def perform(*args)
      enumerator = build_enumerator(*args, cursor: cursor)
      return if enumerator.nil?

      cursor.nil? ? on_start : on_resume
      enumerator.each do |item, item_cursor|
        around_iteration { each_iteration(item, *args) }
        return on_stop unless iterated(item_cursor)
      end
      on_complete
    end

    # Seconds one run may last before the job goes back on its queue to
    # resume (nil: no limit). Override to set it.
    def max_iteration_runtime = nil

    # Cancels this job (as `Client#cancel` does): it stops at the next item
    # and is filed as cancelled.
    def cancel!
      Client.new.cancel(jid)
    end

    # `[item, index + 1]` pairs of `array` from `cursor` (an index).
    def array_enumerator(array, cursor:)
      raise ArgumentError, 'array_enumerator takes an Array' unless array.is_a?(Array)

      start = cursor || 0
      array.each_with_index.lazy.drop(start).map { |item, index| [item, index + 1] }
    end

    def on_start; end
    def on_resume; end
    def on_stop; end
    def on_complete; end
    def around_iteration = yield

    private

    # Saves the cursor; whether to go on (the core decides). Called
    # directly, outside a worker, it always goes on.
    def iterated(item_cursor)
      delivery = cogworker_delivery
      delivery ? delivery.iterated(item_cursor, max_iteration_runtime&.to_f) : true
    end
  end
end
