# frozen_string_literal: true

# A Sidekiq app, unchanged but for `require 'cogworker/sidekiq'` (a Gemfile's
# `gem 'cogworker', require: 'cogworker/sidekiq'`), for test_sidekiq.rb:
# its worker is `cogworker -r app.rb`; `ruby app.rb push` pushes as the
# app's web process would; `ruby app.rb testing` runs its unit tests' modes.
# Each job appends a line of JSON to the file RAN_FILE names.
require 'json'
require 'cogworker/sidekiq'

def record(*what)
  File.open(ENV.fetch('RAN_FILE'), 'a') { |file| file.puts(JSON.generate(what)) }
end

# Sidekiq's server middleware shape.
class Stamp
  def call(_job_instance, job, queue)
    record('middleware', job['class'], queue)
    yield
  end
end

Sidekiq.configure_server do |config|
  config.redis = { url: ENV.fetch('REDIS_URL') }
  config.server_middleware { |chain| chain.add Stamp }
end

Sidekiq.configure_client do |config|
  config.redis = { url: ENV.fetch('REDIS_URL') }
end

class HardJob
  include Sidekiq::Job
  sidekiq_options queue: 'low'

  def perform(name, count)
    record('HardJob', name, count)
  end
end

class FlakyJob
  include Sidekiq::Worker
  sidekiq_options retry: 1, backtrace: 5

  sidekiq_retry_in do |count, exception|
    record('retry_in', count, exception.message)
    0.2
  end

  sidekiq_retries_exhausted do |job, exception|
    record('exhausted', job['jid'], job['retry_count'], exception.message)
  end

  def perform
    raise 'flaky'
  end
end

case ARGV.first
when 'push'
  jids = [HardJob.perform_async('now', 1), HardJob.perform_in(1, 'later', 2),
          HardJob.set(queue: 'default').perform_async('set', 3), FlakyJob.perform_async]
  jids += Sidekiq::Client.push_bulk('class' => HardJob, 'args' => [['bulk', 4], ['bulk', 5]])
  puts JSON.generate(jids)
when 'testing'
  require 'cogworker/sidekiq/testing'
  HardJob.perform_async('fake', 1)
  fake = HardJob.jobs.map { |job| [job['queue'], job['args']] }
  HardJob.drain
  Sidekiq::Testing.inline! { HardJob.perform_async('inline', 2) }
  puts JSON.generate(fake: fake, left: HardJob.jobs.size, fake_mode: Sidekiq::Testing.fake?,
                     server: Sidekiq.server?, layout: Cogworker.config.layout)
end
