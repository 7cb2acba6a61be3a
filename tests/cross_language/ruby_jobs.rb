# frozen_string_literal: true

# The Ruby side of the cross-language tests: records each job's args as JSON.
class CrossEcho
  include Cogworker::Job

  def perform(*args)
    File.open(ENV.fetch('CROSS_RESULTS'), 'a') { |f| f.puts(JSON.generate(['ruby', *args])) }
  end
end

# Server middleware: what a field another language's client middleware added looks like here.
class TenantSeen
  def call(_instance, job, _queue)
    if job['class'] == 'CrossTenant'
      File.open(ENV.fetch('CROSS_RESULTS'), 'a') do |f|
        f.puts(JSON.generate(['ruby-middleware', job['tenant'], job['retry_count'] || 0]))
      end
    end
    yield
  end
end
Cogworker.config.server_middleware { |chain| chain.add TenantSeen }

class CrossTenant
  include Cogworker::Job
  cogworker_options retry: 2
  cogworker_retry_in { |_count, _error| 0 }

  def perform
    marker = "#{ENV.fetch('CROSS_RESULTS')}.rb-ran"
    return if File.exist?(marker)

    File.write(marker, '')
    raise 'the first run fails: the field must survive the retry'
  end
end

# Returns a value: with result_ttl on the push, another language reads it.
class CrossSum
  include Cogworker::Job
  def perform(a, b) = { 'sum' => a + b, 'by' => 'ruby' }
end

# A workflow step: takes the step before's result (PySum's) and returns
# ten times its sum.
class CrossTimesTen
  include Cogworker::Job
  def perform(previous, _tag) = previous.fetch('sum') * 10
end

# Runs until it is cancelled (from any language), then says so.
class CrossCancellable
  include Cogworker::Job

  def perform
    File.open(ENV.fetch('CROSS_RESULTS'), 'a') { |f| f.puts(JSON.generate(%w[ruby started])) }
    sleep 0.02 until cancelled?
    File.open(ENV.fetch('CROSS_RESULTS'), 'a') { |f| f.puts(JSON.generate(%w[ruby stopped])) }
  end
end
