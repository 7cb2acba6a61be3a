# frozen_string_literal: true

require_relative 'test_helper'

# A workflow step that doubles what it is given.
class WorkflowDoubleJob
  include Cogworker::Job

  def perform(value) = value * 2
end

# The last step: records what it got.
class WorkflowRecordJob
  include Cogworker::Job

  CALLS = Queue.new # rubocop:disable Style/MutableConstant

  def perform(*args) = CALLS << args
end

# Workflows from Ruby (issue #31): `Klass.step(...)` and
# `Cogworker::Workflow.chain/group/chord` push steps that each take the
# result of the one before; a workflow pushed in a `Batch#jobs` block is a
# unit of that batch; what cannot be a workflow is refused naming the step.
class TestWorkflow < Minitest::Test
  include CogworkerTest

  def calls = queued(WorkflowRecordJob::CALLS)

  def setup
    super
    WorkflowRecordJob::CALLS.clear
  end

  def test_a_chain_then_a_chord_pass_results_on
    start_runner(concurrency: 4)
    flow = Cogworker::Workflow.chain(
      WorkflowDoubleJob.step(3),
      WorkflowDoubleJob.step(takes_result: true),
      WorkflowRecordJob.step('chain', takes_result: true)
    ).push
    assert_equal 3, flow.steps.size
    wait_for('the chain ended') { calls.include?([12, 'chain']) }
    chord = Cogworker::Workflow.chord([1, 2, 3].map { |n| WorkflowDoubleJob.step(n) },
                                      WorkflowRecordJob.set(queue: 'default').step('chord')).push
    wait_for("the chord's callback ran") { calls.include?([[2, 4, 6], 'chord']) }
    assert_equal ['success', 2], Cogworker::Api.new.batch(chord.id).values_at('state', 'total')
    assert_equal 2, calls.size, calls.inspect
  end

  def test_a_workflow_in_a_batch_is_one_unit_of_it
    batch = Cogworker::Batch.new('outer')
    flow = nil
    batch.jobs do
      WorkflowDoubleJob.perform_async(1)
      flow = Cogworker::Workflow.chain(WorkflowDoubleJob.step(1), WorkflowDoubleJob.step(takes_result: true)).push
    end
    api = Cogworker::Api.new
    assert_equal batch.bid, api.batch(flow.id)['parent']
    assert_equal 2, api.batch(batch.bid)['total'], 'a job and the workflow'
    start_runner(concurrency: 2)
    wait_for('the batch succeeded') { api.batch(batch.bid)['state'] == 'success' }
  end

  def test_what_cannot_be_a_workflow_is_refused_naming_the_step
    refused = assert_raises(Cogworker::InvalidArgument) do
      Cogworker::Workflow.chain(WorkflowDoubleJob.step(1, takes_result: true)).push
    end
    assert_equal 'steps[0].takes_result', refused.field
    refused = assert_raises(Cogworker::InvalidArgument) do
      Cogworker::Workflow.chain(WorkflowDoubleJob.step(1), Cogworker::Workflow.group).push
    end
    assert_equal 'steps[1]', refused.field
    refused = assert_raises(Cogworker::InvalidJob) do
      Cogworker::Workflow.chain(WorkflowDoubleJob.step(1), Cogworker::Workflow.step(WorkflowDoubleJob, 2, delay: 5)).push
    end
    assert_equal 'steps[1]', refused.field
    assert_empty Cogworker::Api.new.batches
  end
end
