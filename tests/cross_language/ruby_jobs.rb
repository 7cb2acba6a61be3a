# frozen_string_literal: true

# The Ruby side of the cross-language tests: records each job's args as JSON.
class CrossEcho
  include Cogworker::Job

  def perform(*args)
    File.open(ENV.fetch('CROSS_RESULTS'), 'a') { |f| f.puts(JSON.generate(['ruby', *args])) }
  end
end
