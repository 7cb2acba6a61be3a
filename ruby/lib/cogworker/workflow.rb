# frozen_string_literal: true

module Cogworker
  # Steps one after another (chain), jobs side by side (group), and a group
  # then a step that takes all their results (chord), across languages
  # (docs/workflows.md). The core builds them on batches and hands each
  # step over exactly once; this is the Ruby idiom around it:
  #
  #   flow = Cogworker::Workflow.chain(
  #     Fetch.step(url),
  #     Parse.step(takes_result: true),              # Parse#perform(fetch's result)
  #     Cogworker::Workflow.group(Index.step, Cogworker::Workflow.step('billing.count'),
  #                               takes_result: true),
  #     Report.step(takes_result: true)              # Report#perform([index's, count's])
  #   ).push
  #   flow.id   # the workflow's batch: Cogworker::Api.new.batch(flow.id)
  #
  # A step that dies stops the workflow there; `on(:death, Klass)` is
  # pushed then, `on(:success, Klass)` after the last step.
  class Workflow
    # What `push` returns: the workflow's id (its batch's) and each step's
    # batch id and jids, in order.
    Pushed = Struct.new(:id, :steps) do
      # The last step's jids (to wait for a result it keeps, say).
      def last_jids = steps.last[1]
    end

    # A step: `handler` (a job class, with the options it was declared
    # with, or a handler's name in any language) with `args` and push
    # `options` (queue:, retry:, result_ttl: ...). `takes_result:` the step
    # before's result goes first in its args (a list after a group).
    def self.step(handler, *args, takes_result: false, **options)
      name, options = Job.handler_and_options(handler, options)
      Native.workflow_step(name, args, takes_result, options)
    end

    # Steps of one job each run side by side, as one step; done when each
    # has succeeded. `takes_result:` is the group's, for each of them.
    def self.group(*steps, takes_result: false) = Native.workflow_group(steps, takes_result)

    # `steps` one after another.
    def self.chain(*steps, description: nil)
      steps, description = Native.workflow_shaped('chain', steps, nil, description&.to_s)
      new(*steps, description: description)
    end

    # `steps` side by side, then `callback` with the list of their results
    # first in its args.
    def self.chord(steps, callback, description: nil)
      steps, description = Native.workflow_shaped('chord', steps, callback, description&.to_s)
      new(*steps, description: description)
    end

    attr_reader :steps, :description

    # Pushed inside a `Batch#jobs` block, it is one unit of that batch.
    def initialize(*steps, description: nil, api: nil)
      @steps, @description = Native.workflow_shaped('workflow', steps, nil, description&.to_s)
      @api = api
      @callbacks = []
    end

    # Pushes `handler` with the workflow's status and then `args` when
    # `event` happens: :success (its last step succeeded), :death (a step
    # died, and it stopped) or :complete.
    def on(event, handler, *args, **options)
      name, options = Job.handler_and_options(handler, options)
      @callbacks << Native.batch_callback(event.to_s, name, args, false, options)
      self
    end

    # The jids the callbacks for `event` will run as (to wait for a result
    # they keep, say), as Batch#callback_jids.
    def callback_jids(event) = Native.callback_jids(@callbacks, event.to_s)

    # Pushes its first step now and the others in turn; what was pushed.
    def push
      pushed = (@api || Api.new).push_workflow(@steps, @description, @callbacks, Batch.current_bid)
      Pushed.new(pushed['id'], pushed['steps'].map { |step| [step['bid'], step['jids']] })
    end
  end
end
