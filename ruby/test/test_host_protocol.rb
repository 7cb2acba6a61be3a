# frozen_string_literal: true

require_relative 'test_helper'
require 'tempfile'
require 'escapes'
require 'open3'
require 'socket'

# However a job ends, its delivery is settled exactly once and its slot is
# freed; only registered classes run; arguments that are not native JSON
# are refused.
class TestHostProtocol < Minitest::Test
  include CogworkerTest

  def retried(jid)
    wait_for("#{jid} in retry") { Cogworker::Api.new.find('retry', jid) }['job']
  end

  def test_a_class_nobody_registered_never_runs
    start_runner
    jid = Cogworker::Client.push('NotAJob', [])
    assert_equal 'cogworker::UnknownHandler', retried(jid)['error_class']
    refute_includes Jobs.seen, :not_a_job_ran
  end

  def test_every_wrong_ending_is_filed_and_every_slot_runs_again
    start_runner(concurrency: Escapes::SLOTS)
    assert_equal 'Exception', retried(RaisesException.perform_async)['error_class']
    assert_equal 'NoMemoryError', retried(RaisesNoMemory.perform_async)['error_class']
    assert_equal 'SystemStackError', retried(OverflowsStack.perform_async)['error_class']
    bad = retried(RaisesBadMessage.perform_async)
    assert_equal 'Escapes::BadMessage', bad['error_class']
    assert_includes bad['error_message'], 'could not be read'
    [RetryHookRaises, RetryHookSymbol].each do |klass|
      jid = klass.perform_async
      retried(jid)
      score = Cogworker::Api.new.find('retry', jid)['score']
      assert_includes 10..30, score - Time.now.to_f, 'the default backoff'
    end
    assert_equal 'café', retried(Latin1Message.perform_async)['error_message'], 'transcoded, not replaced'
    killed = retried(KilledMidJob.perform_async)
    assert_equal 'cogworker::HandlerAborted', killed['error_class']

    Escapes::SLOTS.times { |n| AllAtOnce.perform_async(n) }
    wait_for('every slot busy at once') { Jobs.seen.count { |s| s.is_a?(Array) && s[0] == :together } == Escapes::SLOTS }
    assert_equal({ 'processed' => Escapes::SLOTS, 'failed' => 8, 'expired' => 0, 'cancelled' => 0,
                    'collapsed' => 0, 'throttled' => 0, 'replaced' => 0,
                    'backlog_dropped' => 0 }, Cogworker::Api.new.stats)
  end

  def test_exit_in_a_job_is_its_failure_and_the_worker_exits_0
    env = { 'COGWORKER_REDIS_URL' => @redis.url, 'RUBYLIB' => [File.expand_path('../lib', __dir__), __dir__].join(':') }
    app = File.join(__dir__, 'escapes_app.rb')
    _, err, status = Open3.capture3(env, 'ruby', '-e', <<~RUBY)
      require 'cogworker'
      require 'cogworker/cli'
      load #{app.dump}
      Thread.new { sleep 0.5; ExitsJob.perform_async(3) }
      exit Cogworker::CLI.new.run([])
    RUBY
    assert_equal 0, status.exitstatus, err
    dead_or_retried = Cogworker::Api.new.entries('retry')
    assert_equal ['SystemExit'], dead_or_retried.map { |e| e['job']['error_class'] }
  end

  def test_arguments_that_are_not_json_are_refused_naming_them
    [[Object.new, 'args[0]', 'Object'], [:sym, 'args[0]', 'Symbol'], [1..2, 'args[0]', 'Range'],
     [{ key: 1 }, 'args[0]', 'strings, not Symbol'], [['ok', Escapes::Point.new(1)], 'args[0][1]', 'Escapes::Point'],
     ["\xff".b, 'args[0]', 'not valid Unicode']].each do |arg, field, words|
      error = assert_raises(Cogworker::InvalidArgument) { EchoJob.perform_async(arg) }
      assert_kind_of ArgumentError, error
      assert_equal field, error.field
      assert_includes error.message, words
    end
    assert_raises(Cogworker::InvalidArgument) { Cogworker::Testing.fake! { EchoJob.perform_async(Object.new) } }
    assert_equal 'delay', assert_raises(Cogworker::InvalidJob) { EchoJob.perform_in(Float::INFINITY, 1) }.field
    assert_equal 'queue', assert_raises(Cogworker::InvalidJob) { EchoJob.set(queue: '').perform_async(1) }.field
    assert_equal '0', @redis.cli('DBSIZE')
  end

  # One nesting limit, the core's, in every language: a cyclic or deep
  # value is refused at push naming it, never a SystemStackError.
  def test_values_nested_past_the_limit_or_cyclic_are_refused_naming_them
    cyclic = []
    cyclic << cyclic
    cyclic_hash = {}
    cyclic_hash['self'] = cyclic_hash
    deep = ->(depth) { (depth - 1).times.reduce([]) { |inner, _| [inner] } }
    [cyclic, cyclic_hash, deep.call(101), deep.call(100_000)].each do |arg|
      error = assert_raises(Cogworker::InvalidArgument) { EchoJob.perform_async(1, arg) }
      assert_equal 'args[1]', error.field
      assert_includes error.message, 'deeper than 100 levels'
    end
    assert_equal '0', @redis.cli('DBSIZE')
    assert EchoJob.perform_async(deep.call(100))
  end

  def test_an_interrupt_while_a_push_waits_on_redis_ends_it_without_spinning
    silent = TCPServer.new('127.0.0.1', 0) # accepts, never answers
    script = <<~RUBY
      require 'cogworker'
      Cogworker.configure { |c| c.redis_url = 'redis://127.0.0.1:#{silent.addr[1]}/0' }
      $stdout.puts 'pushing'; $stdout.flush
      begin
        Cogworker::Client.push('A', [1])
      rescue Interrupt
        puts 'interrupted'
      end
      puts Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    RUBY
    err = Tempfile.new('interrupted-push')
    Open3.popen2({ 'RUBYLIB' => File.expand_path('../lib', __dir__) }, 'ruby', '-e', script, err: err.path) do |_in, out, thread|
      assert_equal "pushing\n", out.gets
      sleep 0.5
      started = Time.now
      Process.kill('INT', thread.pid)
      # What the child said, and when, if it was not interrupted.
      assert_equal "interrupted\n", out.gets, -> { "after #{Time.now - started} s:\n#{File.read(err.path)}" }
      assert_operator Time.now - started, :<, 2, 'the interrupt ended the wait'
      assert_operator Float(out.gets), :<, 1.5, 'no CPU spent spinning'
      assert thread.value.success?
    end
  ensure
    silent&.close
    err&.close!
  end
end
