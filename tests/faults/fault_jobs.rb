# frozen_string_literal: true

# The Ruby worker of the fault suite: `Account(token, millis)` sleeps, then
# appends `token` to TEST_RESULTS_FILE (one line per execution).
Cogworker.configure do |c|
  c.orphan_threshold = Float(ENV.fetch('TEST_ORPHAN_THRESHOLD', '300'))
  c.orphan_check_interval = Float(ENV.fetch('TEST_ORPHAN_CHECK', '0.5'))
  c.heartbeat_interval = Float(ENV.fetch('TEST_HEARTBEAT', '0.5'))
  c.scheduler_poll_interval = 0.2
  c.fetch_idle_max_interval = 0.5
  c.shutdown_timeout = 5.0
end

class Account
  include Cogworker::Job

  def perform(token, millis = 0)
    sleep(millis / 1000.0)
    File.open(ENV.fetch('TEST_RESULTS_FILE'), 'a') { |f| f.write("#{token}\n") }
  end
end
