# frozen_string_literal: true

require 'optparse'
require 'erb'
require 'yaml'
require_relative '../cogworker'
require_relative 'admin'
require_relative 'processes'
require_relative 'signal_pipe'

module Cogworker
  # `cogworker [-e ENV] [-c N] [-r FILE] [-C config.yml] [-L logfile] [-q name[,weight]]...`
  # runs a worker; `cogworker web` and the admin commands are in Admin.
  #
  # TERM/INT stop gracefully (exit 0), TSTP quiets, TTIN logs busy jobs and
  # thread stacks. The main thread waits in Ruby (self-pipe + IO.select):
  # signals are only handled there, and trap handlers only write to the pipe.
  class CLI
    # Read (first set wins) for the default environment, and all written
    # back with the resolved one before the config file and the app load.
    ENV_VARS = %w[APP_ENV RAILS_ENV RACK_ENV].freeze
    SIGNALS = Native::WORKER_SIGNALS

    def self.parse(argv)
      environment = ENV_VARS.filter_map { |k| ENV.fetch(k, nil) }.first || 'development'
      options = { flags: Hash.new { |h, k| h[k] = [] }, environment: environment }
      parser = OptionParser.new do |o|
        o.banner = "usage: cogworker [options]\n       cogworker #{Admin::COMMANDS.join('|')} [options]"
        o.separator("\nThe worker (the default command):")
        o.on('-e', '--environment ENV', 'application environment') { |v| options[:environment] = v }
        o.on('-p', '--processes N', Integer, 'fork N worker processes (the app is loaded once, before)') do |v|
          options[:processes] = v
        end
        o.on('-r', '--require FILE', 'file (or Rails app directory) to require') { |v| options[:require] = v }
        o.on('-C', '--config FILE', 'YAML config file (ERB allowed)') { |v| options[:config] = v }
        o.on('-L', '--logfile FILE', 'append logs to FILE') { |v| options[:logfile] = v }
        Native::LOGGING_FLAGS.each do |long, short, help|
          o.on(*[short, long].compact, help) { options[long.delete_prefix('--').tr('-', '_').to_sym] = true }
        end
        o.on('-V', '--version', 'print the version') do
          puts "cogworker #{Cogworker::VERSION}"
          exit 0
        end
        o.separator("\nSettings (the same flags as Python's CLI; docs/configuration.md):")
        setting_flags(o, options[:flags])
        o.separator("\nOther commands: cogworker web, cogworker metrics, and the admin commands " \
                    "#{(Admin::COMMANDS - %w[web metrics]).join(', ')} (cogworker COMMAND --help)")
      end
      rest = parser.parse!(argv)
      raise OptionParser::InvalidArgument, "unknown command #{rest.first} (see cogworker --help)" unless rest.empty?

      options[:settings] = Native.settings_from_flags(options[:flags].to_a).transform_keys(&:to_sym)
      options
    end

    # One flag per setting, from the engine's table.
    def self.setting_flags(parser, given)
      Native.worker_flags.each do |long, short, setting, kind, help|
        names = [short, case kind
                        when 'boolean' then "#{long} [BOOL]"
                        when 'repeated' then "#{long} #{long.delete_prefix('--').upcase}"
                        else "#{long} #{kind.upcase}"
                        end].compact
        help = "#{help} (repeatable)" if kind == 'repeated'
        parser.on(*names, help) { |v| given[setting] << (v.nil? ? 'true' : v.to_s) }
      end
    end

    # The settings of a `-C` file (YAML with ERB) for `environment`: its
    # top-level settings, then the section named for the environment. Every
    # key whose value is a mapping is an environment's section (no setting
    # takes a mapping), so the other environments' are passed over. Keys may
    # be written as Sidekiq's files write them (`:concurrency: 5`).
    def self.load_config_file(path, environment)
      return {} unless path

      data = YAML.safe_load(ERB.new(File.read(path)).result, aliases: true, permitted_classes: [Symbol]) || {}
      raise ConfigError, "config file #{path} must hold a mapping" unless data.is_a?(Hash)

      key = ->(name) { name.to_s.delete_prefix(':') }
      sections, settings = data.partition { |_, value| value.is_a?(Hash) }
      section = sections.find { |name, _| key.(name) == environment.to_s }&.last || {}
      settings.to_h.merge(section).to_h { |name, value| [key.(name).to_sym, value] }
    end

    def run(argv)
      return run_admin(argv.dup) if Admin::COMMANDS.include?(argv.first)

      options = self.class.parse(argv.dup)
      # What jobs print reaches a file or pipe as they print it (Python's
      # print does), not when a buffer fills or the worker exits.
      $stdout.sync = true
      ENV_VARS.each { |k| ENV[k] = options[:environment] }
      redirect_logfile(options[:logfile]) if options[:logfile]
      Native.init_cli_logging(options[:json_logs] ? true : false, options[:verbose] ? true : false)
      Cogworker.logger.level = ::Logger::DEBUG if options[:verbose]
      redis_url = options[:settings][:redis_url]
      Native.warn_secret_on_command_line('--redis-url', redis_url.to_s) if redis_url
      file_settings = self.class.load_config_file(options[:config], options[:environment])
      settings = file_settings.merge(options[:settings])
      # Before the app loads (as the reference does): what the app's own
      # Cogworker.configure sets wins over the file and the flags.
      Cogworker.configure { |c| settings.each { |k, v| c[k] = v } }
      Cogworker.server = true
      require_app(options[:require]) if options[:require]
      options[:processes] ? run_processes(options[:processes]) : run_worker
    rescue ConfigError, InvalidArgument, OptionParser::ParseError => e
      warn "cogworker: #{e.message}"
      Native::EXIT_USAGE
    rescue AppNotLoaded => e
      warn e.message
      Native::EXIT_USAGE
    end

    private

    def run_admin(argv)
      Admin.new.run(argv)
    rescue ConfigError, InvalidArgument, OptionParser::ParseError => e
      warn "cogworker: #{e.message}"
      Native::EXIT_USAGE
    rescue Cogworker::Error => e
      warn "cogworker: #{e.message}"
      1
    end

    def redirect_logfile(path)
      file = File.open(path, 'a')
      file.sync = true
      $stdout.reopen(file)
      $stderr.reopen(file)
    end

    # An app that is not there is a usage error, said in one line (the
    # core's); one that fails while it loads keeps its backtrace.
    def require_app(path)
      file = File.expand_path(File.directory?(path) ? File.join(path, 'config', 'environment.rb') : path)
      ActiveJobHook.while_booting { require file }
    rescue LoadError => e
      raise unless [file, "#{file}.rb"].include?(e.path) || e.message.end_with?(file)

      raise AppNotLoaded, Native.app_not_loaded(path, e.message)
    end

    # The app named by -r cannot be found.
    class AppNotLoaded < StandardError; end

    def run_processes(count)
      processes = Processes.new(count, SIGNALS) { |early_signals| run_worker(early_signals) }
      Cogworker.config.native # invalid settings fail here, once, not in every child
      processes.run
    end

    # `early_signals`: signals a forked child received before its own
    # traps. What each signal does and how the command ends are the
    # engine's decisions, as in Python's CLI.
    def run_worker(early_signals = [])
      runner = Runner.new(Cogworker.config)
      signals = SignalPipe.new
      SIGNALS.each { |sig| trap(sig) { signals.push(sig) } }
      early_signals.each { |sig| signals.push(sig) }
      runner.start
      signals.wait(Native::WAIT_SLICE).each { |sig| runner.signal(sig) } until runner.wait(0)
      if runner.exit_at_once?
        $stdout.flush
        $stderr.flush
        exit!(0)
      end
      0
    end
  end
end
