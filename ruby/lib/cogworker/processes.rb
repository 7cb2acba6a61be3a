# frozen_string_literal: true

module Cogworker
  # Multi-process workers (`cogworker -p N`): the app is loaded once, in the
  # parent, which then forks N children that each run an ordinary worker
  # (their own identity, heartbeat and in-progress jobs).
  #
  # What to fork and when, the backoff before a dead child is restarted,
  # which signals reach the children and when the parent exits are the
  # core's decisions, and its loop runs them (Native::Supervisor#run, which
  # waits without the GVL and lets the traps run between its slices); this
  # class forks and passes signals on. A child dies with its parent: the kernel sends it TERM (a
  # graceful stop) when the parent goes, even by `kill -9`.
  class Processes
    # `child` is called in each forked child with the signals that reached
    # it before it had its own traps; it returns the child's exit status.
    def initialize(count, signals, &child)
      @supervisor = Native::Supervisor.new(count)
      @signals = signals
      @child = child
    end

    # Runs until TERM/INT and every child has stopped; the exit status.
    def run
      parent = Process.pid
      # A child inherits these traps until it installs its own: what they
      # catch there is kept for it, never passed on to its siblings.
      early = []
      @signals.each { |sig| trap(sig) { Process.pid == parent ? @supervisor.signal(sig) : early << sig } }
      @supervisor.run(->(index) { start(index, parent, early) })
    end

    private

    # Child `index`'s pid, or why it could not be forked (the core logs it
    # and retries).
    def start(index, parent, early)
      $stdout.flush
      $stderr.flush
      Process.fork { run_child(index, parent, early) }
    rescue SystemCallError => e
      e.message
    end

    def run_child(index, parent, early)
      status = Native::CHILD_FAILED
      status = Native.bind_to_parent(parent) ? @child.call(early) : Native.child_parent_gone(index)
    rescue Exception => e # rubocop:disable Lint/RescueException -- a child never returns into the parent's loop
      status = Native.child_failed(index, e.class.name.to_s, e.message.to_s, Array(e.backtrace).map(&:to_s))
    ensure
      $stdout.flush
      $stderr.flush
      exit!(status)
    end
  end
end
