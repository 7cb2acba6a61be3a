# frozen_string_literal: true

require 'fileutils'

module Cogworker
  module Testing
    # A private redis-server on a free loopback port, in a temporary
    # directory, for integration tests and demos; stopped by pid (the
    # engine's own helper).
    #   server = Cogworker::Testing::RedisServer.new
    #   Cogworker.configure { |c| c.redis_url = server.url }
    #   ...
    #   server.stop
    class RedisServer
      attr_reader :port, :url, :dir

      def initialize(*extra_args, port: nil)
        @native = Native::RedisServer.new(extra_args.map(&:to_s), port)
        @url, @port, @dir = @native.info
      end

      # One command through redis-cli; its output, stripped.
      def cli(*args)
        IO.popen(['redis-cli', '-p', @port.to_s, *args.map(&:to_s)], err: File::NULL, &:read).to_s.strip
      end

      # Starts it again after `kill` (same port and data directory).
      def restart
        @native.kill
        @native.spawn
      end

      # SIGKILL, and the data directory removed.
      def stop
        @native.kill
        FileUtils.rm_rf(@dir)
      end
    end
  end
end
