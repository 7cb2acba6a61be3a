# frozen_string_literal: true

module Cogworker
  # Jobs pushed as one unit, with callbacks pushed exactly once when they
  # are done (docs/batches.md). The counting is the core's, in the scripts
  # that settle each job; this is the Ruby idiom around it:
  #
  #   batch = Cogworker::Batch.new('import users')
  #   batch.on(:success, ImportDone, { 'month' => 12 }, queue: 'critical')
  #   batch.jobs do                 # every push in the block joins the batch
  #     rows.each { |row| ImportRow.perform_async(row) }
  #   end                           # closed: it completes once they have run
  #
  # A callback runs with the batch's status (a Hash) first, then its args:
  # `ImportDone#perform(status, { 'month' => 12 })`. Events: :complete
  # (every job ran once), :success (every job succeeded), :death (a job
  # died). `Batch.new(bid: bid)` is one that exists: a running job of it
  # (`bid`) adds more with `jobs`, which then neither opens nor closes it.
  class Batch
    attr_reader :bid, :description

    # The batch pushes in this thread join (inside `jobs`), or nil.
    def self.current_bid = Thread.current[:cogworker_batch]

    def initialize(description = '', bid: nil, parent: nil, ttl: nil, keep_for: nil, api: nil)
      @description = description.to_s
      @bid = bid&.to_s
      @parent = parent&.to_s
      @ttl = ttl
      @keep_for = keep_for
      @api = api
      @callbacks = []
      @opens = bid.nil?
      @depth = 0
    end

    # Pushes `handler` (a job class, with the options it was declared
    # with, or a handler's name in any language) with the batch's status
    # and then `args` when `event` (:complete, :success or :death) happens;
    # `options` are push options (queue:, retry:, priority: ...). Before
    # the batch is opened.
    def on(event, handler, *args, **options)
      name, options = Job.handler_and_options(handler, options)
      @callbacks << Native.batch_callback(event.to_s, name, args, !@bid.nil?, options)
      self
    end

    # The jids the callbacks for `event` will run as (to wait for a result
    # they keep, say).
    def callback_jids(event)
      Native.callback_jids(@callbacks, event.to_s)
    end

    # Opens the batch (once) and returns its id; `jobs` does it. A batch
    # opened inside another's `jobs` block is its child unless `parent:`
    # says otherwise.
    def open
      # nil ttl/keep_for: the core's defaults.
      @bid ||= api.open_batch(@description, @callbacks, @parent || Batch.current_bid, @ttl, @keep_for)
    end

    # Pushes in the block join the batch. A new batch is opened first and
    # closed after its outermost block returned (a block entering the same
    # batch again inside it does not close it; one that raised leaves it
    # open: its callbacks do not fire for a batch half pushed). Python's
    # `with batch:` does the same; a scenario pins both.
    def jobs
      outer = Thread.current[:cogworker_batch]
      @depth += 1
      Thread.current[:cogworker_batch] = open
      result = yield self
      close if @opens && @depth == 1
      result
    ensure
      @depth -= 1
      Thread.current[:cogworker_batch] = outer
    end

    # Says every job is pushed: the batch completes once they have run.
    def close = api.close_batch(open)

    # Its counts, failures and times (`Api.new.batch(bid)`).
    def status = api.batch(open)

    private

    def api = (@api ||= Api.new)
  end
end
