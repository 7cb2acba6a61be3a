# frozen_string_literal: true

# The host conformance suite (tests/conformance/scenarios.json), run against
# the Ruby host: the same scenarios run in Python
# (python/tests/test_conformance.py) and Rust (core/tests/conformance.rs).
require_relative 'test_helper'
require_relative 'conformance_jobs'
require 'open3'
require 'securerandom'

class TestConformance < Minitest::Test
  include CogworkerTest

  # The scenarios with "tracing" run where spans are recorded: in the
  # tracing process (ruby/test/tracing/test_tracing.rb loads the
  # opentelemetry-api stand-in, then this file), and only there.
  TRACING = defined?(OpenTelemetry::StandIn) ? true : false
  SCENARIOS = JSON.parse(File.read(File.expand_path('../../tests/conformance/scenarios.json', __dir__)))['scenarios']
                  .select { |s| s.fetch('hosts', ['ruby']).include?('ruby') && s.fetch('tracing', false) == TRACING }

  SCENARIOS.each do |scenario|
    define_method(:"test_#{scenario['name']}") { run_scenario(scenario) }
  end

  def run_scenario(scenario)
    Conformance::TRAIL.clear
    Conformance::HOOK_CALLS.clear
    Cogworker::Testing.clear
    url = scenario['redis'] == 'unreachable' ? 'redis://127.0.0.1:1/0' : @redis.url
    Cogworker.configure { |c| c.redis_url = url }
    config = Cogworker.config
    scenario.fetch('server_middleware', []).each do |name|
      next config.server_middleware.add(Conformance::GateMiddleware) if name == 'gate'

      # One entry per name (a chain keeps one entry per class).
      config.server_middleware.add(Class.new(Conformance::TrailMiddleware), name)
    end
    config.client_middleware.add(Conformance::TenantStamp) if scenario.fetch('client_middleware', []).include?('tenant')
    install_hooks(config, scenario.fetch('hooks', []), 'process')
    OpenTelemetry::StandIn.clear if TRACING
    @jids = {}
    @client = Cogworker::Client.new(config)
    @api = Cogworker::Api.new(config)
    scenario['steps'].each { |step| run_step(step) }
  ensure
    Cogworker::Testing.disable!
    Cogworker::Testing.clear
  end

  STEPS = %w[push push_each push_raw await_buried start_worker await_status status result await_hooks expect_trail
             expect_connections configure periodic testing expect_recorded cli_help cli_worker cli_signals cli_admin
             api_call expect_no_hooks await_queued await_worker_stopped on_event cli_worker_fails cli_serve
             await_queue_size batch batch_status callback_result workflow workflow_refused
             batch_on_refused await_retry push_later await_scheduled cancel limiter acquire release
             within_limit perform_one drain await_batch cli_run traced expect_span carries_its_span
             same_jid progress watch].freeze
  EXE = File.expand_path('../exe/cogworker', __dir__)
  LIB = File.expand_path('../lib', __dir__)
  JOBS = File.expand_path('conformance_jobs.rb', __dir__)

  def run_step(step)
    kind = step.keys.find { |k| STEPS.include?(k) }
    send(:"step_#{kind}", step)
  end

  def install_hooks(config, names, registry)
    if names.include?('error')
      config.error_handlers << lambda do |error, context|
        Conformance.record('hook' => 'error', 'jid' => context[:jid], 'class' => context[:job]['class'],
                           'error_class' => error.class.name, 'error_message' => error.message,
                           'raised_class' => error.class.name, 'registry' => registry)
      end
    end
    return unless names.include?('death')

    config.death_handlers << lambda do |job, error|
      Conformance.record('hook' => 'death', 'jid' => job['jid'], 'class' => job['class'],
                         'error_class' => error.error_class, 'error_message' => error.error_message,
                         'raised_class' => error.class.name, 'registry' => registry)
    end
  end

  def last_segment(name) = name&.split(/::|\./)&.last

  FLOATS = { 'nan' => Float::NAN, 'inf' => Float::INFINITY, '-inf' => -Float::INFINITY }.freeze

  def host_value(value)
    case value
    when Hash
      return Object.new if value['$not_json']
      return FLOATS.fetch(value['$float']) if value.key?('$float')
      return value['$repeat'] * value['times'] if value.key?('$repeat')

      value.transform_values { |v| host_value(v) }
    when Array then value.map { |v| host_value(v) }
    else value
    end
  end

  def push_options(step) = step.fetch('options', {}).transform_keys(&:to_sym)

  def step_push(step)
    if step['on_new_thread']
      pusher = Thread.new { step_push(step.except('on_new_thread')) }
      pusher.report_on_exception = false
      return assert(pusher.join(30), "the push's thread did not finish within 30 s")
    end
    if step['raises']
      error = assert_raises(StandardError) { @client.push(step['push'], step['args'], **push_options(step)) }
      return expect_raised(error, step)
    end
    jid = @client.push(step['push'], step['args'], **push_options(step))
    return assert_nil(jid, 'the push was refused') if step['refused']

    refute_nil jid
    @jids[step['as']] = jid if step['as']
  end

  def step_push_each(step)
    step['options'].each do |option, values|
      values.each do |value|
        error = assert_raises(StandardError) { @client.push(step['push_each'], [], option.to_sym => host_value(value)) }
        expect_raised(error, 'raises' => step['raises'], 'message_has' => option)
      end
    end
  end

  # The payload as another client (or a person) would write it, straight
  # onto its queue's list.
  def step_push_raw(step)
    payload = step['push_raw'].merge('jid' => SecureRandom.hex(12))
    @redis.cli('LPUSH', "cogworker:queue:#{payload.fetch('queue', 'default')}", JSON.generate(payload))
    @jids[step['as']] = payload['jid']
  end

  # A raw payload buried in dead whole, its reason naming the field.
  def step_await_buried(step)
    jid = @jids.fetch(step['await_buried'])
    job = wait_for("#{jid} buried") do
      @api.entries('dead', 0, 1000).map { |e| e['job'] }.find { |j| j.fetch('raw_payload', '').include?(jid) }
    end
    assert_includes job['error_message'], "`#{step['naming']}`"
  end

  def step_batch(step)
    parent = step['parent'] && @jids.fetch(step['parent'])
    batch = Cogworker::Batch.new(step['batch'], parent: parent, api: @api)
    step['on'].each do |callback|
      handler = callback['object'] ? Object.const_get(callback['class']) : callback['class']
      batch.on(callback['event'], handler, *callback['args'],
               **callback.fetch('options', {}).transform_keys(&:to_sym))
      @jids[callback['as']] = batch.callback_jids(callback['event']).last
    end
    pushing = lambda do
      batch.jobs do
        step['jobs'].each { |inner| step_push(inner) }
        step.fetch('inner_batches', []).each { |inner| step_batch(inner) }
        raise ConformanceError, "in the batch's block" if step['block_raises']

        if step['reentered_jobs']
          batch.jobs { step['reentered_jobs'].each { |inner| step_push(inner) } }
          assert @api.batch(batch.bid)['open'], 'the inner block closed it'
        end
      end
    end
    step['block_raises'] ? assert_raises(ConformanceError, &pushing) : pushing.call
    @jids[step['as']] = batch.bid
  end

  def step_workflow(step)
    built = lambda do |spec|
      takes = spec.fetch('takes_result', false)
      next Cogworker::Workflow.group(*spec['group'].map(&built), takes_result: takes) if spec['group']

      options = spec.fetch('options', {}).transform_keys(&:to_sym)
      handler = spec['object'] ? Object.const_get(spec['step']) : spec['step']
      Cogworker::Workflow.step(handler, *spec['args'], takes_result: takes, **options)
    end
    steps = step['steps'].map(&built)
    workflow = case step.fetch('shape', 'workflow')
               when 'chain' then Cogworker::Workflow.chain(*steps)
               when 'chord' then Cogworker::Workflow.chord(steps, built.call(step['callback']))
               else Cogworker::Workflow.new(*steps, description: step['workflow'], api: @api)
               end
    step.fetch('on', []).each do |callback|
      workflow.on(callback['event'], callback['class'], *callback['args'],
                  **callback.fetch('options', {}).transform_keys(&:to_sym))
      @jids[callback['as']] = workflow.callback_jids(callback['event']).last
    end
    pushed = workflow.push
    @jids[step['callback']['as']] = pushed.last_jids.first if step.dig('callback', 'as')
    step['steps'].each_with_index { |spec, index| @jids[spec['as']] = pushed.steps[index][1].first if spec['as'] }
    @jids[step['as']] = pushed.id
  end

  # A workflow whose parts are refused, as they are made or pushed.
  def step_workflow_refused(step)
    error = assert_raises(StandardError) do
      step_workflow('workflow' => nil, 'as' => 'refused', 'steps' => step['workflow_refused'])
    end
    expect_raised(error, step)
  end

  # A callback for an event no batch has, refused as it is added.
  def step_batch_on_refused(step)
    error = assert_raises(StandardError) { Cogworker::Batch.new('refused').on(step['batch_on_refused'], 'ConformanceEcho') }
    expect_raised(error, step)
  end

  def step_limiter(step)
    kinds = { 'concurrent' => ->(name, limit) { Cogworker::Limiter.concurrent(name, limit) } }
    (@limiters ||= {})[step['limiter']] = kinds.fetch(step['kind']).call(step['limiter'], step['limit'])
  end

  def step_acquire(step)
    (@leases ||= {})[step['as']] = @limiters.fetch(step['acquire']).acquire
  end

  def step_release(step)
    @leases.delete(step['release']).release
  end

  # A block within the limiter: it runs, raises (`block_raises`: the error
  # goes through), or the limiter refuses it (`raises`).
  def step_within_limit(step)
    limiter = @limiters.fetch(step['within_limit'])
    ran = false
    if step['raises']
      error = assert_raises(StandardError) { limiter.within_limit(wait: step['wait']) { ran = true } }
      expect_raised(error, step)
      return refute(ran, 'the block ran over the limit')
    end
    block = lambda do
      limiter.within_limit(wait: step['wait']) do
        ran = true
        raise ConformanceError, 'in the block' if step['block_raises']
      end
    end
    step['block_raises'] ? assert_raises(ConformanceError, &block) : block.call
    assert ran
  end

  def step_perform_one(step)
    class_name = step['perform_one']
    return Cogworker::Testing.perform_one(class_name) unless step['raises']

    expect_raised(assert_raises(StandardError) { Cogworker::Testing.perform_one(class_name) }, step)
  end

  def step_drain(step)
    assert_equal step['ran'], Cogworker::Testing.drain(step['drain'])
  end

  def step_cancel(step)
    assert_equal step['answers'], @client.cancel(@jids.fetch(step['cancel']))
  end

  # A push for later in Ruby's own way: seconds, or a Time.
  def step_push_later(step)
    klass = Object.const_get(step['push_later'])
    jid = if step['in']
            klass.perform_in(step['in'], *step['args'])
          else
            klass.perform_at(Time.now + step['at_from_now'], *step['args'])
          end
    refute_nil jid
    @jids[step['as']] = jid
  end

  # The job in the schedule, due within `in_seconds` of now.
  # The job in the schedule, due within `in_seconds` of now (with `args`:
  # carrying those).
  def step_await_scheduled(step)
    entry = await_due('scheduled', step['await_scheduled'], step['in_seconds'])
    assert_equal step['args'], entry['job']['args'], entry.inspect if step.key?('args')
  end

  # The pushes named answered with one jid.
  def step_same_jid(step)
    assert_equal 1, step['same_jid'].map { |name| @jids.fetch(name) }.uniq.size, @jids.inspect
  end

  # The job filed to retry, due within `in_seconds` of now; its backtrace.
  def step_await_retry(step)
    entry = await_due('retry', step['await_retry'], step['in_seconds'])
    backtrace = entry['job'].fetch('error_backtrace', []).join("\n")
    assert_includes backtrace, step.fetch('backtrace_has', '')
    refute_includes backtrace, step['backtrace_lacks'] if step['backtrace_lacks']
  end

  # The entry of the job named `name` in `set`, once there, due within
  # `in_seconds` ([low, high]) of now.
  def await_due(set, name, in_seconds)
    jid = @jids.fetch(name)
    entry = wait_for("#{jid} in #{set}") { @api.find(set, jid) }
    assert_includes (in_seconds[0]..in_seconds[1]), entry['score'] - Time.now.to_f, entry.inspect
    entry
  end

  def step_batch_status(step)
    status = @api.batch(@jids.fetch(step['batch_status']))
    assert_equal step['has'], status.slice(*step['has'].keys), status.inspect
    assert_equal @jids.fetch(step['parent']), status['parent'], status.inspect if step['parent']
  end

  def step_await_batch(step)
    bid = @jids.fetch(step['await_batch'])
    wait_for("batch #{step['await_batch']} #{step['state']}") { @api.batch(bid)['state'] == step['state'] }
  end

  def step_callback_result(step)
    status, *args = @client.result(@jids.fetch(step['callback_result']))
    assert_equal step['status_has'], status.slice(*step['status_has'].keys), status.inspect
    assert_equal step['args'], args
  end

  # With hooks: a configuration of its own (its own registry), as an app
  # with two worker setups would make.
  def step_start_worker(step)
    given = step['start_worker'].is_a?(Hash) ? step['start_worker'] : {}
    if (entry = given['periodic'])
      Cogworker.config.periodic.register(entry['cron'], Object.const_get(entry['class']), args: entry['args'],
                                                                                       queue: entry['queue'])
    end
    Cogworker.config.client_middleware.add(Conformance::StampThenRaise) if given['client_middleware']
    return start_runner(concurrency: 2) unless given['hooks']

    config = Cogworker::Config.new(Cogworker.config.to_h.merge(concurrency: 2))
    install_hooks(config, given['hooks'], 'own')
    runner = Cogworker::Runner.new(config)
    @runners << runner
    runner.start
  end

  def step_on_event(step)
    hooks = Cogworker::Hooks.new
    return hooks.on(step['on_event'].to_sym) {} unless step['error']

    expect_error(assert_raises(Cogworker::Error) { hooks.on(step['on_event'].to_sym) {} }, step['error'])
  end

  def step_await_worker_stopped(step)
    assert @runners.last.wait(step['await_worker_stopped']), 'the worker did not stop'
  end

  def step_await_queued(step)
    queued = wait_for("a #{step['class']} job on #{step['await_queued']}") do
      @api.queue_jobs(step['await_queued']).select { |j| j['class'] == step['class'] && j['args'] == step['args'] }
          .then { |found| found.empty? ? nil : found }
    end
    queued.each do |job|
      refute job.key?(step['lacks']), job.inspect if step['lacks']
      assert_equal step.fetch('has', {}), job.slice(*step.fetch('has', {}).keys), job.inspect
    end
  end

  def step_await_queue_size(step)
    queue = step['await_queue_size']
    wait_for("#{step['is']} jobs on #{queue}") { @api.queue(queue)['size'] == step['is'] }
  end

  def step_expect_no_hooks(step)
    assert_empty(Conformance.calls.select { |c| c['registry'] == step['expect_no_hooks']['registry'] })
  end

  def step_await_status(step)
    jid = @jids.fetch(step['await_status'])
    wait_for("#{jid} #{step['is']}") { @client.status(jid) == step['is'] }
  end

  # Written at most 250 ms after it was made.
  def step_progress(step)
    jid = @jids.fetch(step['progress'])
    api = Cogworker::Api.new
    wait_for("#{jid}'s report") do
      report = api.progress(jid) || {}
      step['has'].all? { |field, wanted| report[field] == wanted }
    end
  end

  def step_watch(step)
    events = Cogworker::Api.new.watch(@jids.fetch(step['watch']), timeout: step['seconds']).to_a
    percents = events.filter_map { |kind, value| value['percent'] if kind == 'progress' }
    assert_equal percents.sort, percents, events.inspect
    assert_equal step['last_percent'], percents.last, events.inspect
    kind, finished = events.last
    assert_equal 'finished', kind, events.inspect
    step['finished_has'].each { |field, wanted| assert_equal wanted, finished[field], field }
  end

  def client_for(step) = step['new_client'] ? Cogworker::Client.new : @client

  def step_status(step)
    assert_equal step['is'], client_for(step).status(@jids.fetch(step['status']))
  end

  def step_api_call(step)
    api = step['new_api'] ? Cogworker::Api.new : @api
    args = step.fetch('args', [])
    return expect_raised(assert_raises(StandardError) { api.public_send(step['api_call'], *args) }, step) if step['raises']

    answer = api.public_send(step['api_call'], *args)
    return assert_equal(step['is'], answer) if step.key?('is')

    refute_nil answer
    assert_equal step.fetch('has', {}), answer.slice(*step.fetch('has', {}).keys) if step['has']
  end

  def expect_raised(error, step)
    assert_equal step['raises'], last_segment(error.class.name), error.inspect
    assert_includes error.message, step.fetch('message_has', '')
  end

  def step_result(step)
    jid = @jids.fetch(step['result'])
    if (expected = step['failed'])
      failed = assert_raises(Cogworker::JobFailed) { @client.result(jid) }
      assert_equal [jid, expected['status'], expected['error_class'], expected['error_message']],
                   [failed.jid, failed.status, last_segment(failed.error_class), failed.error_message]
      expected.fetch('message_has', []).each { |text| assert_includes failed.message, text }
    else
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      outcome = client_for(step).result(jid, wait: step['wait'])
      assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, step.fetch('within', 600),
                      'answered late'
      expected = step.key?('pending') ? Cogworker::Pending.new(jid, step['pending']) : step['value']
      assert_equal expected, outcome
    end
  end

  def step_await_hooks(step)
    step['await_hooks'].each do |expected|
      wanted = expected.merge('jid' => @jids.fetch(expected['jid']))
      wait_for("hook call #{wanted} (seen: #{Conformance.calls})") do
        Conformance.calls.any? do |call|
          wanted.all? { |k, v| (%w[error_class raised_class].include?(k) ? last_segment(call[k]) : call[k]) == v }
        end
      end
    end
  end

  # Awaited: a handler may still be writing its last entry.
  def step_expect_trail(step)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 15
    sleep(0.01) until step['expect_trail'] == Conformance::TRAIL || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    assert_equal step['expect_trail'], Conformance::TRAIL
  end

  def step_expect_connections(step)
    spec = step['expect_connections']
    before = connections_received
    spec['during'].each { |inner| run_step(inner) }
    # The redis-cli asking counts itself once.
    opened = connections_received - before - 1
    assert_operator opened, :<=, spec['at_most'], "#{opened} connections opened"
  end

  def connections_received
    @redis.cli('INFO', 'stats')[/total_connections_received:(\d+)/, 1].to_i
  end

  def step_configure(step)
    error = assert_raises(Cogworker::Error) do
      Cogworker.configure { |c| host_value(step['configure']).each { |k, v| c[k] = v } }
    end
    expect_error(error, step['error'])
  end

  def step_periodic(step)
    entry = host_value(step['periodic'])
    handler = entry['object'] ? Object.const_get(entry['class']) : entry['class']
    register = lambda do
      Cogworker.config.periodic.register(entry['cron'], handler, args: entry.fetch('args', []),
                                                                 tz: entry['tz'], queue: entry['queue'], retry: entry['retry'])
    end
    return expect_error(assert_raises(Cogworker::Error) { register.call }, step['error']) if step['error']

    begin
      pjid = register.call
      registered = Cogworker.config.periodic.entries.find { |e| e['class'] == entry['class'] }
    ensure
      Cogworker.config.periodic.clear
    end
    assert_equal step['has'], step['has'].keys.to_h { |k| [k, registered[k]] }, registered.inspect
    assert_equal step['pjid'], pjid
  end

  def expect_error(error, expected)
    assert_equal expected['class'], last_segment(error.class.name), error.inspect
    assert_equal expected['field'], error.field, error.inspect
    assert_equal expected['value'], error.value, error.inspect if expected.key?('value')
  end

  def step_testing(step)
    mode = { 'fake' => :fake!, 'inline' => :inline! }.fetch(step['testing'])
    Cogworker::Testing.send(mode) { step['steps'].each { |inner| run_step(inner) } }
  end

  # Ruby's worker is the default command: `cogworker --help` shows its flags.
  def step_cli_help(step)
    command = step['cli_help'] == 'worker' ? [] : [step['cli_help']]
    shown = IO.popen([RbConfig.ruby, '-I', LIB, EXE, *command, '--help'], err: File::NULL, &:read)
    flags = shown.scan(/(?<![\w-])(-{1,2}[a-z][a-z-]*)/).flatten
    missing = step['lists'] - flags
    assert_empty missing, shown
  end

  def step_cli_worker(step)
    pid = spawn_child({ 'COGWORKER_REDIS_URL' => @redis.url }, RbConfig.ruby, '-I', LIB, EXE, '-r', JOBS,
                      *step['cli_worker'], err: File::NULL, out: File::NULL)
    api = Cogworker::Api.new
    process = wait_for('the worker registered') { api.processes.first }
    assert_equal step['process'], process['info'].slice(*step['process'].keys)
    Process.kill('TERM', pid)
    assert_predicate exit_status(pid), :success?
  end

  def step_cli_worker_fails(step)
    app = step['cli_worker_fails'] == 'conformance_jobs' ? JOBS : step['cli_worker_fails']
    _, err, status = Open3.capture3({ 'COGWORKER_REDIS_URL' => @redis.url }, RbConfig.ruby, '-I', LIB, EXE,
                                    '-r', app, *step.fetch('flags', []))
    assert_equal step['exit'], status.exitstatus, err
    assert_includes err, step['stderr_has']
    step.fetch('stderr_lacks', []).each { |text| refute_includes err, text }
  end

  def step_cli_serve(step)
    Dir.mktmpdir('cogworker-serve-') do |dir|
      err = File.join(dir, 'stderr')
      out, writer = IO.pipe
      pid = spawn_child({ 'COGWORKER_REDIS_URL' => @redis.url }, RbConfig.ruby, '-I', LIB, EXE, step['cli_serve'],
                        '--port', '0', out: writer, err: err)
      writer.close
      line = out.gets.to_s
      step['line_has'].each { |text| assert_includes line, text }
      Process.kill(step['send'], pid)
      assert_equal step['exit'], exit_status(pid).exitstatus
      assert_includes File.read(err), step['stderr_has']
    ensure
      out&.close
    end
  end

  # A worker CLI sent each signal in turn: what it shows (as a process),
  # logs and exits with after each.
  def step_cli_signals(step)
    Dir.mktmpdir('cogworker-signals-') do |dir|
      log = File.join(dir, 'worker.log')
      pid = spawn_child({ 'COGWORKER_REDIS_URL' => @redis.url }, RbConfig.ruby, '-I', LIB, EXE, '-r', JOBS,
                        err: log, out: File::NULL)
      wait_for('the worker registered') { @api.processes.first }
      step['cli_signals'].each do |signalled|
        Process.kill(signalled['send'], pid)
        signalled.fetch('process', {}).each do |key, value|
          wait_for("the process's #{key} is #{value}") { @api.processes.first[key] == value }
        end
        signalled.fetch('log_has', []).each { |text| wait_for("#{text.inspect} in the log") { File.read(log).include?(text) } }
        assert_equal signalled['exit'], exit_status(pid).exitstatus, File.read(log) if signalled.key?('exit')
      end
    end
  end

  def step_traced(step)
    OpenTelemetry.tracer_provider.tracer('conformance').in_span(step['traced']) do
      step['steps'].each { |inner| run_step(inner) }
    end
  end

  # Each finished span as the scenarios describe one.
  def recorded_spans
    OpenTelemetry::StandIn.spans.map do |span|
      { 'name' => span.name, 'kind' => span.kind.to_s, 'attributes' => span.attributes,
        'trace_id' => span.context.hex_trace_id, 'span_id' => span.context.hex_span_id,
        'parent_span_id' => span.parent_span_id, 'status' => span.status.code,
        'description' => span.status.description.to_s, 'events' => span.events.map(&:first) }
    end
  end

  def job_span(name, kind)
    jid = @jids.fetch(name)
    recorded_spans.find { |s| s['kind'] == kind && s['attributes']['messaging.message.id'] == jid }
  end

  # `text` with each `{name}` replaced by `also`'s value of that name or,
  # failing that, by the jid of the job bound by that `as`.
  def bound(text, also = {})
    text.gsub(/\{(\w+)\}/) { also[Regexp.last_match(1)] || @jids.fetch(Regexp.last_match(1)) }
  end

  def step_expect_span(step)
    name, kind = step.values_at('expect_span', 'kind')
    span = wait_for("the #{kind} span of #{name}") { job_span(name, kind) }
    assert_equal step['name'], span['name'], span.inspect
    wanted = step.fetch('attributes', {}).transform_values { |v| bound(v) }
    assert_equal wanted, span['attributes'].slice(*wanted.keys), span.inspect
    parent = if step['parent'] == 'producer'
               job_span(name, 'producer').tap { |p| assert_equal p['trace_id'], span['trace_id'] }
             else
               recorded_spans.find { |s| s['name'] == step['parent'] }
             end
    assert_equal parent['span_id'], span['parent_span_id'], [span, parent].inspect
    assert_equal step['status'], span['status'], span.inspect if step['status']
    assert_includes span['description'], step.fetch('description_has', ''), span.inspect
    assert_equal step['events'], span['events'], span.inspect if step['events']
  end

  def step_carries_its_span(step)
    jid = @jids.fetch(step['carries_its_span'])
    producer = job_span(step['carries_its_span'], 'producer')
    job = @api.queue_jobs('default').find { |j| j['jid'] == jid }
    # Version, trace id, span id; the flags are the SDK's.
    assert job['traceparent'].start_with?("00-#{producer['trace_id']}-#{producer['span_id']}-"), [job, producer].inspect
  end

  # The worker CLI run on an app, then each of `then` in turn.
  def step_cli_run(step)
    Dir.mktmpdir('cogworker-run-') do |dir|
      log = File.join(dir, 'worker.log')
      app = File.expand_path("#{step['cli_run']}.rb", __dir__)
      pid = spawn_child({ 'COGWORKER_REDIS_URL' => @redis.url }, RbConfig.ruby, '-I', LIB, EXE, '-r', app,
                        *step['flags'], err: log, out: File::NULL)
      run_in_turn(pid, step['then'], log)
    end
  end

  def run_in_turn(pid, steps, log)
    killed = {} # 'pid': the child kill_child killed
    steps.each do |step|
      if step['log_has']
        step['log_has'].each do |text|
          text = bound(text, killed)
          wait_for("#{text.inspect} in the log") { File.read(log).include?(text) }
        end
      elsif step['log_times']
        step['log_times'].each do |text, times|
          wait_for("#{text.inspect} #{times} times in the log") { File.read(log).scan(text).size == times }
        end
      elsif step['kill_child']
        started = File.read(log)[/started worker process #{step['kill_child']} of \d+ \(pid (\d+)\)/, 1]
        assert started, File.read(log)
        killed['pid'] = started
        Process.kill('KILL', Integer(started))
      elsif step['send']
        Process.kill(step['send'], pid)
        assert_equal step['exit'], exit_status(pid).exitstatus, File.read(log)
      else
        run_step(step)
      end
    end
  end

  def step_cli_admin(step)
    out, err, status = Open3.capture3({ 'COGWORKER_REDIS_URL' => @redis.url }, RbConfig.ruby, '-I', LIB, EXE,
                                      *step['cli_admin'])
    assert_equal step['exit'], status.exitstatus, [out, err].inspect
    # Help texts may wrap: spaces and line breaks compare as one space.
    Array(step.fetch('stdout_has', [])).each { |text| assert_includes out.split.join(' '), text.split.join(' ') }
    step.fetch('stdout_lacks', []).each { |text| refute_includes out, text }
    assert_includes err, step.fetch('stderr_has', '')
    step.fetch('stderr_lacks', []).each { |text| refute_includes err, text }
  end

  def step_expect_recorded(step)
    step['expect_recorded'].each do |class_name, count|
      jobs = Cogworker::Testing.jobs_for(class_name)
      assert_equal count, jobs.size, class_name
      next if count.zero?

      fields = step.fetch('fields', {})
      assert_equal fields, jobs.last.slice(*fields.keys)
      step.fetch('has', []).each { |field| assert jobs.last.key?(field), "#{field} in #{jobs.last}" }
    end
  end
end
