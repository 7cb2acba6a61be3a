# frozen_string_literal: true

require 'optparse'

module Cogworker
  # `cogworker web` (the dashboard) and the admin commands: `stats`,
  # `queues`, `processes`, `retry-all SET`, `clear SET`, `pause QUEUE`,
  # `unpause QUEUE`, `clear-queue QUEUE`, `quiet IDENTITY`, `stop IDENTITY`.
  # Each admin command is one ops-API call, printed.
  class Admin
    COMMANDS = %w[web stats queues processes retry-all clear pause unpause clear-queue quiet stop].freeze
    WITH_TARGET = %w[retry-all clear pause unpause clear-queue quiet stop].freeze

    def initialize(out: $stdout)
      @out = out
    end

    def run(argv)
      command = argv.shift
      options = parse(command, argv)
      config = Cogworker.config.merge(redis_url: options[:redis_url], namespace: options[:namespace])
      return web(config, options) if command == 'web'

      target = argv.shift
      raise ConfigError, "cogworker #{command} needs an argument" if WITH_TARGET.include?(command) && !target

      admin(Api.new(config), command, target)
      0
    end

    private

    def parse(command, argv)
      options = { host: '127.0.0.1', port: 7890, auth: ENV.fetch('COGWORKER_WEB_AUTH', nil) }
      OptionParser.new do |o|
        o.banner = "usage: cogworker #{command} [options]"
        o.on('--redis-url URL', 'Redis (default COGWORKER_REDIS_URL, REDIS_URL)') { |v| options[:redis_url] = v }
        o.on('--namespace NS', 'key prefix (default cogworker)') { |v| options[:namespace] = v }
        if command == 'web'
          o.on('--host HOST', 'address to bind (default 127.0.0.1)') { |v| options[:host] = v }
          o.on('--port PORT', Integer, 'port (default 7890)') { |v| options[:port] = v }
          o.on('--auth USER:PASSWORD', 'require basic auth (or COGWORKER_WEB_AUTH)') { |v| options[:auth] = v }
        end
      end.parse!(argv)
      options
    end

    def web(config, options)
      server = Native::WebServer.new(config.to_h, options[:host], options[:port], options[:auth])
      @out.puts "cogworker web: #{server.url}"
      @out.flush
      stopping = false
      %w[TERM INT].each { |sig| trap(sig) { stopping = true } }
      until server.wait(0.2)
        server.stop if stopping
      end
      0
    end

    def admin(api, command, target)
      case command
      when 'stats' then stats(api)
      when 'queues'
        @out.puts format('%-24s %10s %10s  %s', 'QUEUE', 'SIZE', 'LATENCY', 'STATE')
        api.queues.each do |q|
          @out.puts format('%-24s %10d %9.1fs  %s', q['name'], q['size'], q['latency'], q['paused'] ? 'paused' : 'running')
        end
      when 'processes'
        api.processes.each do |p|
          info = p['info']
          @out.puts "#{p['identity']}  busy #{p['busy']}/#{info['concurrency']}  queues #{Array(info['queues']).join(' ')}" \
                    "#{'  quiet' if p['quiet']}"
        end
      when 'retry-all' then @out.puts "retried #{api.retry_all(target)} job(s) from #{target}"
      when 'clear' then @out.puts "deleted #{api.clear_set(target)} job(s) from #{target}"
      when 'clear-queue' then @out.puts "deleted #{api.clear_queue(target)} job(s) from queue #{target}"
      else signal(api, command, target)
      end
    end

    def signal(api, command, target)
      case command
      when 'pause' then api.pause_queue(target)
      when 'unpause' then api.unpause_queue(target)
      when 'quiet' then api.quiet_process(target)
      when 'stop' then api.stop_process(target)
      end
      @out.puts "#{command}: #{target}"
    end

    def stats(api)
      totals = api.stats
      today = api.stats(Time.now.utc.strftime('%Y-%m-%d'))
      @out.puts "processed  #{totals['processed'].to_s.rjust(12)}  today #{today['processed']}"
      @out.puts "failed     #{totals['failed'].to_s.rjust(12)}  today #{today['failed']}"
      %w[scheduled retry dead].each { |set| @out.puts "#{set.ljust(10)} #{api.set_size(set).to_s.rjust(12)}" }
    end
  end
end
