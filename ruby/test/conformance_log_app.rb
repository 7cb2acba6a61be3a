# frozen_string_literal: true

# The app of the conformance scenario on log lines: its job writes a line
# through Cogworker.logger and fails; its error handler raises.
require_relative 'conformance_jobs'

class ConformanceLogs
  include Cogworker::Job

  def perform(word)
    Cogworker.logger.warn("the job says #{word}")
    raise ConformanceError, 'logged'
  end
end

Cogworker.configure do |config|
  config.error_handlers << ->(_error, _context) { raise ConformanceError, 'hook boom' }
end
