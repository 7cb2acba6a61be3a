# frozen_string_literal: true

require_relative 'test_helper'

# `cogworker -p N` as real processes: the children share the work, a dead
# child is restarted, TERM stops them all (exit 0), and a parent killed with
# -9 leaves no child running.
class TestProcesses < Minitest::Test
  include CogworkerTest
  EXE = File.expand_path('../exe/cogworker', __dir__)
  JOBS = File.expand_path('jobs.rb', __dir__)

  def setup
    super
    @tmp = Dir.mktmpdir('cogworker-processes-')
    @results = File.join(@tmp, 'results.txt')
    @log = File.join(@tmp, 'worker.log')
  end

  def teardown
    FileUtils.rm_rf(@tmp)
    super
  end

  def lines = File.exist?(@results) ? File.readlines(@results, chomp: true) : []
  def log = File.read(@log)

  def children_of(parent)
    Dir.children('/proc').grep(/\A\d+\z/).filter_map do |entry|
      fields = File.read("/proc/#{entry}/stat").rpartition(')').last.split
      entry.to_i if fields[1].to_i == parent && fields[0] != 'Z'
    rescue SystemCallError
      nil # gone meanwhile
    end.sort
  end

  def alive?(pid)
    File.read("/proc/#{pid}/stat").rpartition(')').last.split[0] != 'Z'
  rescue SystemCallError
    false
  end

  def registered_pids = Cogworker::Api.new.processes.map { |p| p['info']['pid'].to_i }

  def start_swarm(*args)
    env = { 'COGWORKER_REDIS_URL' => @redis.url, 'TEST_RESULTS_FILE' => @results, 'TEST_WORKER_PROCESS' => '1' }
    pid = spawn_child(env, 'ruby', EXE, '-r', JOBS, '-c', '1', '-p', '2', *args, out: File::NULL, err: @log)
    children = []
    wait_for('2 worker processes registered') do
      children = children_of(pid)
      children.size == 2 && (children - registered_pids).empty?
    end
    [pid, children]
  end

  # A handler that will not stop past its time limit ends its child, which
  # the parent replaces; the job is filed as timed out by the core alone,
  # with what its class's retry hook said when the limit passed (issue #44
  # item 6: the default backoff, a retry within seconds, ran it again).
  def test_a_handler_that_will_not_stop_is_filed_with_its_retry_hook_and_its_child_replaced
    pid, children = start_swarm('--timeout-grace', '1')
    jid = StubbornJob.perform_async('stuck')
    entry = wait_for('filed in retry', timeout: 30) { Cogworker::Api.new.find('retry', jid) }
    job = entry['job']
    assert_equal 'cogworker::Timeout', job['error_class']
    assert_includes job['error_message'], 'its process was ended'
    assert_in_delta 3600, entry['score'] - job['failed_at'], 100
    wait_for('the child replaced', timeout: 30) { (children_of(pid) - children).size == 1 }
    refute_includes lines, '[:slept, "stuck"]'
    Process.kill('TERM', pid)
    assert_predicate exit_status(pid), :success?, log
  end

  def test_the_children_share_the_work_and_stop_together
    pid, children = start_swarm
    # One slot each: two 1 s jobs run at once only in two processes.
    %w[a b].each { |tag| SleeperJob.perform_async(1.0, tag) }
    wait_for('both jobs started') { (['[:start, "a"]', '[:start, "b"]'] - lines).empty? }
    refute_includes lines, '[:slept, "a"]', 'the jobs ran one after the other'
    Process.kill('TERM', pid)
    assert exit_status(pid, 30).success?, log
    assert_empty ['[:slept, "a"]', '[:slept, "b"]'] - lines
    assert(children.none? { |c| alive?(c) })
    assert_equal 2, Cogworker::Api.new.stats['processed']
    assert_includes log, 'started worker process 2 of 2'
    assert_includes log, 'all 2 worker processes stopped'
  end

  def test_a_child_that_dies_is_restarted
    pid, children = start_swarm
    Process.kill('KILL', children[0])
    replaced = []
    wait_for('a new child') do
      replaced = children_of(pid)
      replaced.size == 2 && !replaced.include?(children[0])
    end
    assert_includes replaced, children[1]
    newcomer = (replaced - [children[1]]).first
    wait_for('the new child registered') { registered_pids.include?(newcomer) }
    EchoJob.perform_async('after restart')
    wait_for('the job ran') { lines.include?('["after restart"]') }
    assert_includes log, "(pid #{children[0]}) was killed by signal 9; restarting in"
    Process.kill('INT', pid)
    assert exit_status(pid, 30).success?, log
  end

  def test_a_parent_killed_with_9_leaves_no_child_running
    pid, children = start_swarm
    Process.kill('KILL', pid)
    Process.wait(pid)
    wait_for('every child gone', timeout: 30) { children.none? { |c| alive?(c) } }
  end

  def test_an_invalid_process_count_is_refused_naming_it
    env = { 'COGWORKER_REDIS_URL' => @redis.url }
    pid = spawn_child(env, 'ruby', EXE, '-r', JOBS, '-p', '0', out: File::NULL, err: @log)
    assert_equal 2, exit_status(pid).exitstatus
    assert_includes log, 'processes = 0'
  end
end
