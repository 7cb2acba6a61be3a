# frozen_string_literal: true

module Cogworker
  # Signals on their way from trap handlers to the main thread. A trap
  # handler may only write to a pipe (a Mutex is not allowed in trap
  # context), and on Ruby 3.1 signals are handled on the main thread only,
  # so it waits here, in Ruby, never blocked in native code.
  class SignalPipe
    def initialize
      @reader, @writer = IO.pipe
    end

    # From a trap handler: queue `sig` (its name) for the main thread.
    def push(sig)
      @writer.write_nonblock("#{sig}\n", exception: false)
    end

    # The signal names that arrived, waiting up to `timeout` seconds for
    # one; none on a timeout or a spurious wake-up.
    def wait(timeout)
      return [] unless IO.select([@reader], nil, nil, timeout)

      chunk = @reader.read_nonblock(1024, exception: false)
      chunk.is_a?(String) ? chunk.split("\n") : []
    end

    # In a forked child: the parent's pipe is not this process's to use.
    def close
      [@reader, @writer].each(&:close)
    end
  end
end
