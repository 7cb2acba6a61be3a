# frozen_string_literal: true

# The shop's jobs: ActiveJob classes as a Rails app writes them, and one
# plain Cogworker::Job beside them. Each appends what it did to the file
# AJ_LOG names, which the test reads.
module JobLog
  def self.write(line)
    File.open(ENV.fetch('AJ_LOG'), 'a') do |f|
      f.flock(File::LOCK_EX)
      f.puts(line)
    end
  end
end

class ApplicationJob < ActiveJob::Base; end

class GreetJob < ApplicationJob
  queue_as :default

  def perform(name, count, options)
    JobLog.write("greet #{name} #{count + 1} #{options['tone']} #{options[:size]} #{provider_job_id}")
  end
end

class MailJob < ApplicationJob
  queue_as :mailers

  def perform(to)
    JobLog.write("mail #{to} #{queue_name}")
  end
end

class FlakyError < StandardError; end

class FlakyJob < ApplicationJob
  retry_on FlakyError, wait: 1, attempts: 3

  def perform(key)
    JobLog.write("flaky #{key} #{executions}")
    raise FlakyError, "attempt #{executions}" if executions < 3
  end
end

class StaleError < StandardError; end

class DiscardedJob < ApplicationJob
  discard_on StaleError

  def perform(key)
    JobLog.write("discarded #{key}")
    raise StaleError, 'record is gone'
  end
end

class ExhaustedError < StandardError; end

class ExhaustedJob < ApplicationJob
  retry_on ExhaustedError, wait: 1, attempts: 2

  def perform(key)
    JobLog.write("exhausted #{key} #{executions}")
    raise ExhaustedError, "still failing after #{executions}"
  end
end

class PlainJob
  include Cogworker::Job

  def perform(word)
    JobLog.write("plain #{word} #{jid}")
  end
end

# Not an ActiveJob class: a payload naming it must never run it.
class NotAJob
  def self.new(*)
    JobLog.write('NotAJob instantiated')
    super
  end

  def perform(*) = JobLog.write('NotAJob ran')
end

# At most one at a time per account, as Solid Queue declares it.
class AccountSyncJob < ApplicationJob
  limits_concurrency to: 1, key: ->(account, _n) { "acct:#{account}" }

  def perform(account, n)
    JobLog.write("sync-start #{account} #{n} #{Process.clock_gettime(Process::CLOCK_REALTIME)}")
    sleep 0.2
    JobLog.write("sync-end #{account} #{n} #{Process.clock_gettime(Process::CLOCK_REALTIME)}")
  end
end

# A burst of one document's reindexes runs once, with the last arguments.
class ReindexJob < ApplicationJob
  cogworker_flow key: ->(doc, _n) { "doc:#{doc}" }, debounce: 0.3

  def perform(doc, n)
    JobLog.write("reindex #{doc} #{n}")
  end
end

# Reads the adapter's `stopping?`, as Rails 8.1's continuations do: false
# while it runs, true once its worker is told to stop (then it ends).
class PatientJob < ApplicationJob
  def perform
    adapter = self.class.queue_adapter
    JobLog.write("patient started, stopping? #{adapter.stopping?}")
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 20
    sleep(0.05) until adapter.stopping? || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    JobLog.write("patient saw stopping? #{adapter.stopping?}")
  end
end
