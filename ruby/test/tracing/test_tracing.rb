# frozen_string_literal: true

# OpenTelemetry in Ruby: a push opens a PRODUCER span whose trace context
# the job carries; the worker runs `perform` in a CONSUMER span that is its
# child, with the messaging attributes; a failure sets error status and
# records the exception; a bulk or raw push is one span every job continues.
# The opentelemetry-api gem cannot be installed here, so these run against
# the stand-in in otel_standin/ (same calls and signatures), in a process
# of their own (scripts/test): the other Ruby tests run without tracing.
$LOAD_PATH.unshift(File.expand_path('otel_standin', __dir__), File.expand_path('../../lib', __dir__))
require 'minitest/autorun'
require 'opentelemetry'
require 'cogworker'
require_relative '../waiting'

Cogworker.logger.level = Logger::WARN
ENV['COGWORKER_LOG'] = 'error' # no line per job (or expected failure) from the engine here

class TracedWork
  include Cogworker::Job

  def perform(value) = value
end

class TracedFails
  include Cogworker::Job
  cogworker_options retry: false

  def perform = raise(ArgumentError, 'traced failure')
end

class TestTracing < Minitest::Test
  include Waiting

  def setup
    OpenTelemetry::StandIn.clear
    @redis = Cogworker::Testing::RedisServer.new
    Cogworker.reset!
    Cogworker.configure do |c|
      c.redis_url = @redis.url
      c.heartbeat_interval = 0.5
      c.shutdown_timeout = 5.0
    end
  end

  def teardown
    if @runner
      @runner.stop
      assert @runner.wait(15), 'worker did not stop'
      @runner.join
    end
    @redis.stop
  end

  def spans(kind) = OpenTelemetry::StandIn.spans.select { |s| s.kind == kind }

  # The API loaded (many gems depend on it) but no SDK set up: nothing is
  # recorded, so no span is made (one cost a push tens of microseconds),
  # and a push still passes on a trace context that is current (a remote
  # parent, say), for a process downstream that records.
  def test_without_an_sdk_no_span_is_made_and_a_current_context_is_passed_on
    sdk = OpenTelemetry.tracer_provider
    OpenTelemetry.tracer_provider = OpenTelemetry::Internal::ProxyTracerProvider.new
    require 'cogworker/testing'
    Cogworker::Testing.fake! do
      TracedWork.perform_async(1)
      Cogworker::Client.push_bulk('Other', [[1], [2]])
      remote = OpenTelemetry::Context.new(OpenTelemetry::SpanContext.new('4bf92f3577b34da6a3ce929d0e0e4736',
                                                                         '00f067aa0ba902b7', '01'))
      OpenTelemetry::Context.with_current(remote) do
        TracedWork.perform_async(2)
        Cogworker::Client.new.push_payloads([{ 'class' => 'Raw', 'args' => [] }])
      end
    end
    carried = Cogworker::Testing.jobs_for('TracedWork').to_h { |j| [j['args'], j['traceparent']] }
    expected = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
    assert_equal({ [1] => nil, [2] => expected }, carried)
    assert_equal [nil, nil], Cogworker::Testing.jobs_for('Other').map { |j| j['traceparent'] }
    assert_equal [expected], Cogworker::Testing.jobs_for('Raw').map { |j| j['traceparent'] }
  ensure
    OpenTelemetry.tracer_provider = sdk
    Cogworker::Testing.clear
  end
  def tracer = OpenTelemetry.tracer_provider.tracer('test')

  def test_the_consumer_span_continues_the_producer_span
    request = nil
    work, failing = tracer.in_span('POST /orders') do |span|
      request = span
      [TracedWork.perform_async(7), TracedFails.perform_async]
    end
    sent = spans(:producer).to_h { |s| [s.attributes['messaging.message.id'], s] }
    assert_equal [work, failing].sort, sent.keys.sort
    sent.each_value do |span|
      assert_equal request.context.hex_span_id, span.parent_span_id, 'the push is a child of the request'
      assert_equal 'send default', span.name
      assert_equal 'cogworker', span.attributes['messaging.system']
    end

    @runner = Cogworker::Runner.new(Cogworker.config.merge(concurrency: 2)).start
    consumed = wait_for('both consumer spans') do
      found = spans(:consumer).to_h { |s| [s.attributes['messaging.message.id'], s] }
      found.size == 2 && found
    end
    consumed.each do |jid, span|
      producer = sent.fetch(jid)
      assert_equal producer.context.hex_trace_id, span.context.hex_trace_id, 'same trace as the push'
      assert_equal producer.context.hex_span_id, span.parent_span_id, 'a child of the PRODUCER span'
      assert_equal 'process default', span.name
      assert_equal %w[cogworker default process],
                   span.attributes.values_at('messaging.system', 'messaging.destination.name', 'messaging.operation.type')
    end
    assert_equal %w[TracedWork UNSET], [consumed[work].attributes['cogworker.job.class'], consumed[work].status.code]
    assert_equal 'ERROR', consumed[failing].status.code
    assert_includes consumed[failing].status.description, 'ArgumentError: traced failure'
    assert_equal ['exception'], consumed[failing].events.map(&:first)
  end

  def test_a_bulk_or_raw_push_is_one_producer_span_every_job_continues
    own = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    bulk, raw = tracer.in_span('import') do
      [Cogworker::Client.push_bulk('TracedWork', [[1], [2], [3]], queue: 'bulk'),
       Cogworker.client.push_payloads([{ 'class' => 'TracedWork', 'args' => [4], 'queue' => 'raw' },
                                       { 'class' => 'TracedWork', 'args' => [5], 'queue' => 'raw', 'traceparent' => own }])]
    end
    sent = spans(:producer).to_h { |s| [s.name, s] }
    assert_equal ['send bulk', 'send raw'], sent.keys.sort
    assert_equal 3, sent['send bulk'].attributes['messaging.batch.message_count']
    context = ->(span) { "00-#{span.context.hex_trace_id}-#{span.context.hex_span_id}-01" }
    assert_equal bulk.to_h { |jid| [jid, context.(sent['send bulk'])] }, carried('bulk')
    assert_equal({ raw[0] => context.(sent['send raw']), raw[1] => own }, carried('raw'), "a payload's own context is kept")
  end

  private

  def carried(queue)
    payloads = `redis-cli -p #{@redis.port} LRANGE cogworker:queue:#{queue} 0 -1`.lines.map { |l| JSON.parse(l) }
    payloads.to_h { |p| [p['jid'], p['traceparent']] }
  end
end

# The conformance scenarios with "tracing" run here, where spans are
# recorded (test_conformance.rb selects them when the stand-in is loaded).
require_relative '../test_conformance'
