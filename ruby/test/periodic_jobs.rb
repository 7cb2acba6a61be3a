# frozen_string_literal: true

# For `cogworker -r periodic_jobs.rb`: a per-second entry with a handler
# here, and one for a class this process can't resolve.
require_relative 'jobs'

class TickJob
  include Cogworker::Job
  def perform(label) = Jobs.record(label)
end

Cogworker.configure do |c|
  c.periodic do |mgr|
    mgr.register('* * * * * *', TickJob, args: ['rb-tick'])
    mgr.register('*/2 * * * * *', 'Missing::Report', queue: 'elsewhere')
  end
end
