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
      fields = [['logger', (progname || 'cogworker').to_s]]
      job = Thread.current[:cogworker_job]
      fields.push(['jid', job[:jid].to_s], ['class', job[:class].to_s]) if job
      text = message
      if message.is_a?(Exception)
        text = "#{message.class}: #{message.message}"
        fields << ['exception', (message.backtrace || []).join("\n")]
      end
      Native.log_line(SEV_LABEL[severity] || 'ANY', thread_name, text.to_s, fields)
      true
    end

    private

    def thread_name
      thread = Thread.current
      thread.name || (thread == Thread.main ? 'main' : "thread-#{thread.object_id}")
    end
  end
end
