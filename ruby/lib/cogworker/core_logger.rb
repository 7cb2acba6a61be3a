# frozen_string_literal: true

require 'logger'

module Cogworker
  # The default `Cogworker.logger`: a standard Logger whose entries are
  # written by the engine, in its format (text, or JSON with `--json-logs`),
  # so a worker prints one format. While a job runs, its entries carry the
  # job's jid and class; an exception logged carries its backtrace.
  class CoreLogger < ::Logger
    def initialize(level: ::Logger::INFO)
      super(File::NULL, level: level)
    end

    def add(severity, message = nil, progname = nil)
      severity ||= UNKNOWN
      return true if severity < level

      if message.nil?
        message = block_given? ? yield : progname
        progname = @progname
      end
      job = Thread.current[:cogworker_job]
      text = message
      backtrace = nil
      if message.is_a?(Exception)
        text = "#{message.class}: #{message.message}"
        backtrace = (message.backtrace || []).join("\n")
      end
      Native.log_record(SEV_LABEL[severity] || 'ANY', Thread.current.name, Thread.current == Thread.main, text.to_s,
                        (progname || 'cogworker').to_s, job&.dig(:jid)&.to_s, job&.dig(:class)&.to_s, backtrace)
      true
    end
  end
end
