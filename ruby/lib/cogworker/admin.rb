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
      options = parse(command, argv)
      Native.init_logging(false)
      warn_secrets(options)
      config = Cogworker.config.merge(redis_url: options[:redis_url], namespace: options[:namespace])
      return web(config, options, metrics_only: command == 'metrics') if %w[web metrics].include?(command)

      @out.print Api.new(config).admin(command, argv.shift)
      0
    end

    private

    def parse(command, argv)
      options = { host: '127.0.0.1', port: nil, allowed_hosts: [], insecure_no_auth: false }
      OptionParser.new do |o|
        o.banner = "usage: cogworker #{command} [options]#{" #{ARGS[command]}" if ARGS[command]}"
        o.separator(HELP[command]) if HELP[command]
        o.on('--redis-url URL', 'Redis (default COGWORKER_REDIS_URL, REDIS_URL)') { |v| options[:redis_url] = v }
        o.on('--namespace NS', 'key prefix (default cogworker)') { |v| options[:namespace] = v }
        if %w[web metrics].include?(command)
          o.on('--host HOST', 'address to bind (default 127.0.0.1)') { |v| options[:host] = v }
          o.on('--port PORT', Integer, "port (default #{command == 'web' ? 7890 : 9191})") { |v| options[:port] = v }
          o.on('--auth USER:PASSWORD', 'require basic auth (or COGWORKER_WEB_AUTH)') { |v| options[:auth] = v }
          o.on('--allowed-host HOST[:PORT]',
               'a Host name to serve besides localhost; repeatable (or COGWORKER_WEB_ALLOWED_HOSTS)') do |v|
            options[:allowed_hosts] << v
          end
          o.on('--insecure-no-auth', 'serve on a non-loopback --host without --auth') { options[:insecure_no_auth] = true }
        end
      end.parse!(argv)
      options
    end

    def warn_secrets(options)
      { '--redis-url' => options[:redis_url], '--auth' => options[:auth] }.each do |flag, value|
        Native.warn_secret_on_command_line(flag, value) if value
      end
    end

    def web(config, options, metrics_only:)
      server = Native::WebServer.new(config.native, options[:host], options[:port], options[:auth],
                                     options[:allowed_hosts], options[:insecure_no_auth], metrics_only)
      # Trapped before the address is printed: whoever reads it may stop us
      # at once. Said and stopped out of the trap, by the core.
      stopping = nil
      %w[TERM INT].each { |sig| trap(sig) { stopping = sig } }
      @out.puts(server.address_line)
      @out.flush
      until server.wait(0.2)
        next unless stopping

        server.stop_on_signal(stopping)
        stopping = nil
      end
      0
    end
  end
end
