# frozen_string_literal: true

# Awaiting a condition or a child's exit against a deadline (no
# sleep-and-hope), for every Ruby test file, including those that run in a
# process of their own.
module Waiting
  def wait_for(what, timeout: 15)
    deadline = Time.now + timeout
    until (result = yield)
      flunk "timed out after #{timeout}s waiting for: #{what}#{waiting_detail}" if Time.now > deadline
      sleep 0.02
    end
    result
  end

  # The exit status of child `pid`; it is killed and the test fails if it
  # has not exited within `timeout` seconds.
  def exit_status(pid, timeout = 15)
    deadline = Time.now + timeout
    loop do
      _, status = Process.wait2(pid, Process::WNOHANG)
      return status if status

      if Time.now > deadline
        Process.kill('KILL', pid)
        Process.wait(pid)
        flunk "process #{pid} did not exit in #{timeout}s#{waiting_detail}"
      end
      sleep 0.02
    end
  end

  # More to say when a wait fails (a worker's log).
  def waiting_detail = ''
end
