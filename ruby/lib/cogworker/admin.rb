# frozen_string_literal: true

require 'optparse'

module Cogworker
  # `cogworker web` (the dashboard), `cogworker metrics` (Prometheus'
  # /metrics alone) and the admin commands (`stats`,
  # `queues`, `retry-all SET`, ...: the engine's list, `Native.admin_commands`),
  # each run by the engine and its output printed.
  class Admin
    COMMANDS = (%w[web metrics] + Native.admin_commands.map(&:first)).freeze
    # Each command's argument (`JID`, `[JOBS]`: may be left out) and help.
    ARGS = Native.admin_commands.to_h { |name, arg, _| [name, arg] }.freeze
    HELP = Native.admin_commands.to_h { |name, _, help| [name, help] }.freeze

    def initialize(out: $stdout)
      @out = out
    end

    def run(argv)
      command = argv.shift
      given = parse(command, argv)
      Native.init_logging(false)
      redis_url, namespace = Native.command_connection(command, given)
      config = Cogworker.config.merge(redis_url: redis_url, namespace: namespace)
      return web(config, command, given) if %w[web metrics].include?(command)

      @out.print Api.new(config).admin(command, argv.shift)
      0
    end

    private

    # The command's flags, from the engine's table: each given one with
    # its texts (one per use), for the engine to read.
    def parse(command, argv)
      given = Hash.new { |h, k| h[k] = [] }
      OptionParser.new do |o|
        o.banner = "usage: cogworker #{command} [options]#{" #{ARGS[command]}" if ARGS[command]}"
        o.separator(HELP[command]) if HELP[command]
        Native.command_flags(command).each do |long, metavar, help|
          o.on(metavar ? "#{long} #{metavar}" : long, help) { |v| given[long] << (metavar ? v : 'true') }
        end
      end.parse!(argv)
      given.to_a
    end

    def web(config, command, given)
      server = Native::WebServer.new(config.native, command, given)
      # Trapped before the address is printed: whoever reads it may stop us
      # at once. Said and stopped out of the trap, by the core.
      stopping = nil
      %w[TERM INT].each { |sig| trap(sig) { stopping = sig } }
      @out.puts(server.address_line)
      @out.flush
      until server.wait(Native::WAIT_SLICE)
        next unless stopping

        server.stop_on_signal(stopping)
        stopping = nil
      end
      0
    end
  end
end
