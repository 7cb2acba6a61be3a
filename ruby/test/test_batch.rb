# frozen_string_literal: true

require_relative 'test_helper'

# One step of a batch.
class BatchStepJob
  include Cogworker::Job

  def perform(_value) = nil
end

# A job of a batch that adds `count` steps to its own batch.
class BatchSpawnerJob
  include Cogworker::Job

  def perform(count)
    Cogworker::Batch.new(bid: bid).jobs { count.times { |n| BatchStepJob.perform_async(n) } }
  end
end

# A batch callback: records the event its status names, with its tag.
class BatchDoneJob
  include Cogworker::Job

  CALLS = Queue.new # rubocop:disable Style/MutableConstant

  def perform(status, tag) = CALLS << [tag, status['event'], status]
end

# Batches from Ruby (issue #31): `batch.jobs { ... }` pushes into a batch
# and closes it; callbacks run once with the batch's status; a job adds to
# its own batch; a batch opened in another's block is its child; a block
# that raises leaves its batch open.
class TestBatch < Minitest::Test
  include CogworkerTest

  def calls = queued(BatchDoneJob::CALLS)

  def events(tag) = calls.select { |t, _, _| t == tag }.map { |_, event, _| event }.sort

  def setup
    super
    BatchDoneJob::CALLS.clear
  end

  def test_a_batch_closes_after_its_block_and_fires_complete_and_success_once
    start_runner(concurrency: 4)
    batch = Cogworker::Batch.new('ruby import')
    batch.on(:success, BatchDoneJob, 'import').on(:complete, BatchDoneJob, 'import', queue: 'default')
    batch.jobs do
      assert_equal batch.bid, Cogworker::Batch.current_bid
      BatchStepJob.perform_async(1)
      Cogworker.client.push_bulk('BatchStepJob', [[2], [3]])
      BatchSpawnerJob.perform_async(2)
    end
    assert_nil Cogworker::Batch.current_bid
    wait_for('both callbacks ran') { events('import') == %w[complete success] }
    status = batch.status
    assert_equal ['success', 0, false, 6], status.values_at('state', 'pending', 'open', 'total')
    success = calls.find { |_, event, _| event == 'success' }.last
    assert_equal [batch.bid, 'ruby import', 6], success.values_at('bid', 'description', 'total')
  end

  def test_a_child_batch_counts_in_its_parent_and_a_raising_block_leaves_it_open
    parent = Cogworker::Batch.new('parent').on(:success, BatchDoneJob, 'parent')
    child = Cogworker::Batch.new('child').on(:success, BatchDoneJob, 'child')
    parent.jobs do
      BatchStepJob.perform_async('p')
      child.jobs { BatchStepJob.perform_async('c') }
    end
    api = Cogworker::Api.new
    assert_equal parent.bid, api.batch(child.bid)['parent']
    assert_equal 2, api.batch(parent.bid)['total'], 'a job and the child'
    stuck = Cogworker::Batch.new('stuck').on(:complete, BatchDoneJob, 'stuck')
    assert_raises(RuntimeError) do
      stuck.jobs do
        BatchStepJob.perform_async('s')
        raise 'half pushed'
      end
    end
    start_runner(concurrency: 2)
    wait_for('child and parent succeeded') { events('parent') == ['success'] && events('child') == ['success'] }
    wait_for("the stuck batch's job ran") { api.batch(stuck.bid)['pending'].zero? }
    assert_equal %w[open true], api.batch(stuck.bid).values_at('state', 'open').map(&:to_s)
    assert_empty events('stuck')
    refused = assert_raises(Cogworker::InvalidArgument) { BatchStepJob.set(bid: 'nosuchbatch').perform_async(1) }
    assert_equal 'bid', refused.field
    assert_raises(Cogworker::InvalidArgument) { stuck.on(:success, BatchDoneJob, 'late') }
  end
end
