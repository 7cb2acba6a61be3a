# frozen_string_literal: true

require_relative 'test_helper'
require 'open3'

class TestCLI < Minitest::Test
  include CogworkerTest
  EXE = File.expand_path('../exe/cogworker', __dir__)
  JOBS = File.expand_path('jobs.rb', __dir__)

  def setup
    super
    @tmp = Dir.mktmpdir('cogworker-cli-')
    @results = File.join(@tmp, 'results.txt')
  end

  def teardown
    FileUtils.rm_rf(@tmp)
    super
  end

  def spawn_worker(*args, **env)
    full_env = { 'COGWORKER_REDIS_URL' => @redis.url, 'TEST_RESULTS_FILE' => @results, 'TEST_WORKER_PROCESS' => '1' }
    spawn_child(full_env.merge(env.transform_keys(&:to_s)), 'ruby', EXE, '-r', JOBS, '-c', '2', *args,
                  out: File::NULL, err: File.join(@tmp, 'worker.log'))
  end

  def lines = File.exist?(@results) ? File.readlines(@results, chomp: true) : []

  def test_term_and_int_let_the_running_job_finish
    %w[TERM INT].each_with_index do |sig, i|
      pid = spawn_worker
      SleeperJob.perform_async(1.0, "a#{i}")
      wait_for('started') { lines.include?("[:start, \"a#{i}\"]") }
      Process.kill(sig, pid)
      assert exit_status(pid).success?, File.read(File.join(@tmp, 'worker.log'))
      assert_includes lines, "[:slept, \"a#{i}\"]"
    end
  end

  def test_term_past_the_timeout_requeues
    File.write(File.join(@tmp, 'cogworker.yml'), "shutdown_timeout: <%= 0.25 * 2 %>\nconcurrency: 2\n")
    pid = spawn_worker('-C', File.join(@tmp, 'cogworker.yml'))
    jid = SleeperJob.perform_async(30, 'b')
    wait_for('started') { lines.include?('[:start, "b"]') }
    started = Time.now
    Process.kill('TERM', pid)
    assert exit_status(pid).success?
    assert_operator Time.now - started, :<, 10
    assert_includes @redis.cli('LRANGE', 'cogworker:queue:default', '0', '-1'), jid
  end

  # `cogworker -r jobs.rb 2>&1 | head`: once the reader is gone every log
  # line fails to write; the worker goes on and TERM still stops it,
  # giving back the job it was running.
  def test_a_worker_whose_log_pipe_closed_runs_jobs_and_stops_on_term
    env = { 'COGWORKER_REDIS_URL' => @redis.url, 'TEST_RESULTS_FILE' => @results, 'TEST_WORKER_PROCESS' => '1' }
    File.write(File.join(@tmp, 'cogworker.yml'), "shutdown_timeout: 0.5\n")
    reader, writer = IO.pipe
    pid = spawn_child(env, 'ruby', EXE, '-r', JOBS, '-c', '2', '-C', File.join(@tmp, 'cogworker.yml'),
                      out: writer, err: writer)
    writer.close
    reader.gets
    reader.close
    Cogworker::Client.new.push_bulk('EchoJob', (1..20).map { |i| [i] })
    wait_for('20 ran') { lines.size == 20 }
    jid = SleeperJob.perform_async(30, 'piped')
    wait_for('the long job started') { lines.include?('[:start, "piped"]') }
    Process.kill('TERM', pid)
    assert exit_status(pid).success?
    assert_includes @redis.cli('LRANGE', 'cogworker:queue:default', '0', '-1'), jid
  end

  # Past shutdown_timeout the running jobs go back to their queue and the
  # process exits at once: their handlers do not run on to the end there
  # (they run again, once, in the next worker).
  def test_jobs_given_back_at_shutdown_do_not_also_finish_in_the_stopping_process
    File.write(File.join(@tmp, 'cogworker.yml'), "shutdown_timeout: 1\n")
    pid = spawn_worker('-c', '4', '-C', File.join(@tmp, 'cogworker.yml'))
    tags = %w[t0 t1 t2 t3]
    Cogworker::Client.new.push_bulk('SleeperJob', tags.map { |tag| [3, tag] })
    wait_for('all four started') { tags.all? { |tag| lines.include?("[:start, \"#{tag}\"]") } }
    Process.kill('TERM', pid)
    assert exit_status(pid).success?
    assert_empty lines.grep(/slept/), 'none finished in the stopping process'
    assert_equal 0, Cogworker::Api.new.stats['processed']
    again = spawn_worker('-c', '4')
    wait_for('all four ran again') { lines.grep(/slept/).size == 4 }
    Process.kill('TERM', again)
    assert exit_status(again).success?
    assert_equal(tags.map { |tag| "[:slept, \"#{tag}\"]" }, lines.grep(/slept/).sort)
    assert_equal 4, Cogworker::Api.new.stats['processed']
  end

  # A fresh process whose ten slot threads all find a job at once wraps ten
  # first deliveries together (that once deadlocked it, in the lookup of the
  # Delivery class).
  def test_a_worker_started_on_a_full_queue_runs_every_job
    Cogworker::Client.new.push_bulk('EchoJob', (1..500).map { |i| [i] })
    pid = spawn_worker('-c', '10')
    wait_for('500 jobs run', timeout: 30) { lines.size == 500 }
    assert_equal (1..500).map { |i| "[#{i}]" }.sort, lines.sort
    Process.kill('TERM', pid)
    assert exit_status(pid).success?
  end

  def test_killed_worker_jobs_are_recovered_by_another
    a = spawn_worker
    SleeperJob.perform_async(30, 'c')
    wait_for('A started') { lines.include?('[:start, "c"]') }
    Process.kill('KILL', a)
    Process.wait(a)
    b = spawn_worker(TEST_ORPHAN_THRESHOLD: '2', TEST_SLEEP_SCALE: '0')
    wait_for('B finished', timeout: 30) { lines.include?('[:slept, "c"]') }
    assert_equal 2, lines.count('[:start, "c"]')
    Process.kill('TERM', b)
    assert exit_status(b).success?
  end

  def test_environment_is_written_back_and_config_file_uses_erb
    script = File.join(@tmp, 'env_check.rb')
    File.write(script, "File.write(#{File.join(@tmp, 'env.txt').inspect}, " \
                       "[ENV['APP_ENV'], ENV['RAILS_ENV'], ENV['RACK_ENV']].join(','))\n")
    File.write(File.join(@tmp, 'c.yml'), "concurrency: <%= 1 + 1 %>\nstaging:\n  queues: ['stage,2']\n")
    options = Cogworker::CLI.parse(['-e', 'staging', '-q', 'x'])
    assert_equal 'staging', options[:environment]
    settings = Cogworker::CLI.load_config_file(File.join(@tmp, 'c.yml'), 'staging')
    assert_equal({ concurrency: 2, queues: ['stage,2'] }, settings)
    pid = spawn_child({ 'COGWORKER_REDIS_URL' => @redis.url, 'RACK_ENV' => 'ignored' }, 'ruby', EXE,
                        '-e', 'staging', '-r', script, '-C', File.join(@tmp, 'c.yml'),
                        out: File::NULL, err: File::NULL)
    # Written, not only created: File.write creates the file first.
    wait_for('app loaded') { File.exist?(File.join(@tmp, 'env.txt')) && !File.read(File.join(@tmp, 'env.txt')).empty? }
    assert_equal 'staging,staging,staging', File.read(File.join(@tmp, 'env.txt'))
    # TERM once the worker runs (its traps are set), not while the app loads.
    wait_for('worker registered') { Cogworker::Api.new.processes.any? }
    Process.kill('TERM', pid)
    assert exit_status(pid).success?
  end

  # A file with a section per environment, in Sidekiq's own style too
  # (symbol keys), is read in every environment (issue #44 item 16: the
  # other environments' sections were refused as settings, and `:key:`
  # raised Psych::DisallowedClass).
  def test_a_config_file_has_sections_per_environment_and_may_use_symbol_keys
    path = File.join(@tmp, 'sections.yml')
    File.write(path, <<~YAML)
      :concurrency: 5
      :queues:
        - critical,2
        - default
      development:
        :concurrency: 2
      production:
        concurrency: 20
        shutdown_timeout: 25
    YAML
    queues = %w[critical,2 default]
    assert_equal({ concurrency: 2, queues: queues }, Cogworker::CLI.load_config_file(path, 'development'))
    assert_equal({ concurrency: 20, queues: queues, shutdown_timeout: 25 },
                 Cogworker::CLI.load_config_file(path, 'production'))
    assert_equal({ concurrency: 5, queues: queues }, Cogworker::CLI.load_config_file(path, 'staging'))
  end

  # A worker embedded in an application logs through Cogworker.logger
  # (issue #44: the engine's lines went to file descriptor 2 whatever
  # logger the app set).
  def test_an_embedded_worker_logs_through_cogworker_logger
    script = File.join(@tmp, 'embedded.rb')
    File.write(script, <<~RUBY)
      require 'stringio'
      require 'cogworker'
      require #{JOBS.inspect}
      out = StringIO.new
      logger = Logger.new(out)
      logger.formatter = ->(severity, _time, progname, message) { "\#{severity} \#{progname}: \#{message}\n" }
      Cogworker.logger = logger
      Cogworker.configure { |c| c.redis_url = #{@redis.url.inspect} }
      jid = EchoJob.perform_async('embedded')
      runner = Cogworker::Runner.new(Cogworker.config).start
      deadline = Time.now + 10
      sleep 0.05 until out.string.include?("jid=\#{jid}") || Time.now > deadline
      runner.stop
      runner.wait(10)
      runner.join
      puts out.string
      puts "jid \#{jid}"
    RUBY
    out, err, status = Open3.capture3('ruby', '-I', File.expand_path('../lib', __dir__), script)
    assert status.success?, err
    jid = out[/^jid (\h+)$/, 1]
    assert_match(/^INFO cogworker\.completion: done jid=#{jid} class=EchoJob/, out)
    refute_includes err, jid, 'nothing of the job on stderr'
  end

  # The -C file and the flags are applied before the app loads (as the
  # reference does), so what the app's Cogworker.configure says wins.
  def test_the_apps_configure_wins_over_the_config_file
    app = File.join(@tmp, 'app.rb')
    File.write(app, "Cogworker.configure { |c| c.labels = ['from-app'] }\n")
    File.write(File.join(@tmp, 'c.yml'), "labels: ['from-file']\nconcurrency: 3\n")
    pid = spawn_child({ 'COGWORKER_REDIS_URL' => @redis.url }, 'ruby', EXE, '-r', app, '-C', File.join(@tmp, 'c.yml'),
                        out: File::NULL, err: File::NULL)
    process = wait_for('worker registered') { Cogworker::Api.new.processes.first }
    assert_equal ['from-app'], process['info']['labels']
    assert_equal 3, process['info']['concurrency'], 'what the app left alone comes from the file'
    Process.kill('TERM', pid)
    assert exit_status(pid).success?
  end

  def test_bad_concurrency_exits_2_with_a_message
    pid = spawn_worker('-c', '0')
    assert_equal 2, exit_status(pid).exitstatus
    assert_includes File.read(File.join(@tmp, 'worker.log')), 'concurrency'
  end

  def test_help_lists_the_commands_and_an_unknown_command_is_refused
    shown = IO.popen([RbConfig.ruby, '-I', File.expand_path('../lib', __dir__), EXE, '--help'], &:read)
    %w[web metrics stats retry-all --queue --shutdown-timeout].each { |word| assert_includes shown, word }
    # `cogworker help` started a worker before.
    pid = spawn_worker('help')
    assert_equal 2, exit_status(pid).exitstatus
    assert_includes File.read(File.join(@tmp, 'worker.log')), 'unknown command help'
  end
end

class TestCLISignals < Minitest::Test
  include CogworkerTest
  EXE = TestCLI::EXE
  JOBS = TestCLI::JOBS

  def test_tstp_quiets_ttin_dumps_and_logfile_receives_the_log
    Dir.mktmpdir('cogworker-cli-') do |tmp|
      results = File.join(tmp, 'results.txt')
      log = File.join(tmp, 'worker.log')
      env = { 'COGWORKER_REDIS_URL' => @redis.url, 'TEST_RESULTS_FILE' => results, 'TEST_WORKER_PROCESS' => '1' }
      pid = spawn_child(env, 'ruby', EXE, '-r', JOBS, '-c', '2', '-L', log, out: File::NULL, err: File::NULL)
      lines = -> { File.exist?(results) ? File.readlines(results, chomp: true) : [] }
      SleeperJob.perform_async(1.5, 'd')
      wait_for('started') { lines.call.include?('[:start, "d"]') }
      Process.kill('TTIN', pid)
      # The busy jobs are logged first, then every thread's stack.
      wait_for('busy jobs in the logfile') { File.exist?(log) && File.read(log).include?('busy: SleeperJob') }
      wait_for('thread stacks in the logfile') { File.read(log).include?('thread main') }
      Process.kill('TSTP', pid)
      api = Cogworker::Api.new
      wait_for('quiet') { api.processes.any? && api.processes.all? { |p| p['quiet'] } }
      SleeperJob.perform_async(0, 'e')
      wait_for('running job finished') { lines.call.include?('[:slept, "d"]') }
      sleep 1
      refute_includes lines.call, '[:start, "e"]'
      Process.kill('TERM', pid)
      _, status = Process.wait2(pid)
      assert status.success?
    end
  end

  # One log format: `--json-logs` makes every line JSON, the engine's and
  # the app's; a job gets a done line (and at debug a start line), a failure
  # one line with its backtrace, and what a job logs carries its jid and class.
  def test_puts_in_a_job_reaches_a_stdout_file_while_the_worker_runs
    Dir.mktmpdir('cogworker-out-') do |tmp|
      out = File.join(tmp, 'stdout.txt')
      PutsJob.perform_async('while running')
      pid = spawn_child({ 'COGWORKER_REDIS_URL' => @redis.url }, 'ruby', EXE, '-r', JOBS, '-c', '2',
                        out: out, err: File::NULL)
      # Block-buffered, it showed up only when the worker exited.
      wait_for('the line in the file') { File.read(out).include?('puts while running') }
      Process.kill('TERM', pid)
      assert exit_status(pid).success?
    end
  end

  def test_json_logs
    Dir.mktmpdir('cogworker-logs-') do |tmp|
      log = File.join(tmp, 'worker.log')
      logged = LoggingJob.perform_async('hello')
      declined = DeclinedJob.perform_async
      # At debug, a job's start is logged too (at info, its end only).
      env = { 'COGWORKER_REDIS_URL' => @redis.url, 'COGWORKER_LOG' => 'debug' }
      pid = spawn_child(env, 'ruby', EXE, '-r', JOBS, '-c', '2', '--json-logs', out: File::NULL, err: log)
      api = Cogworker::Api.new
      wait_for('both settled') { api.stats['processed'] == 1 && api.stats['failed'] == 1 }
      Process.kill('TERM', pid)
      assert exit_status(pid).success?
      entries = File.readlines(log, chomp: true).map { |line| JSON.parse(line) } # every line parses
      mine = entries.select { |e| e['jid'] == logged }
      assert_equal %w[start done], mine.reject { |e| e['logger'] }.map { |e| e['message'].split.last }
      said = mine.find { |e| e['logger'] }
      assert_equal ['logging hello', 'LoggingJob'], said.values_at('message', 'class')
      done = mine.find { |e| e['message'].end_with?('done') }
      assert_equal %w[LoggingJob default ok], done.values_at('class', 'queue', 'outcome')
      failures = entries.select { |e| e['jid'] == declined && e['message'].include?('failed') }
      assert_equal 1, failures.size, 'a failure is logged once'
      assert_includes failures.first['backtrace'], 'jobs.rb'
    end
  end
end

