# frozen_string_literal: true

require 'logger'

module Cogworker
  # The engine's log lines through `Cogworker.logger`, for a worker embedded
  # in an application (a Rails process, a console, a test): an app that set
  # its own Logger (`Cogworker.logger = Rails.logger`) gets them there, with
  # the job's fields; the default CoreLogger writes them as the engine does.
  # The CLI chose one format for the process first, and keeps it.
  module LogForwarding
    LEVELS = { 'ERROR' => ::Logger::ERROR, 'WARN' => ::Logger::WARN, 'INFO' => ::Logger::INFO,
               'DEBUG' => ::Logger::DEBUG, 'TRACE' => ::Logger::DEBUG }.freeze
    @lock = Mutex.new
    @thread = nil

    # Starts the one log thread of this process, unless a format was chosen.
    def self.start
      @lock.synchronize do
        return if @thread || !Native.init_log_forwarding

        @thread = Thread.new { Native.run_log_forwarding(method(:emit)) }
        @thread.name = Native::THREAD_NAMES.fetch('logs')
        at_exit do
          Native.stop_log_forwarding
          @thread.join(5)
        end
      end
    end

    # One engine line to `Cogworker.logger` (a logger that raises loses the
    # line, never the thread).
    def self.emit(level, target, thread, message, fields)
      logger = Cogworker.logger
      return Native.log_line(level, thread, message, fields.to_a) if logger.is_a?(CoreLogger)

      text = fields.empty? ? message : "#{message} #{fields.map { |k, v| "#{k}=#{v}" }.join(' ')}"
      logger.add(LEVELS.fetch(level, ::Logger::INFO), text, target.gsub('::', '.'))
    rescue StandardError
      nil
    end
  end
end
