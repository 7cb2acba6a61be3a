# frozen_string_literal: true

module Cogworker
  # Testing modes, no Redis needed (`require 'cogworker/testing'`):
  #   Cogworker::Testing.fake!   # pushes recorded: HardWorker.jobs, .drain, .perform_one, .clear
  #   Cogworker::Testing.inline! # pushes run at once
  #   Cogworker::Testing.disable!
  # Each takes an optional block, restoring the previous mode after it.
  module Testing
    @mode = nil
    @jobs = Hash.new { |h, k| h[k] = [] }
    @lock = Monitor.new

    class << self
      def fake!(&block) = switch(:fake, &block)
      def inline!(&block) = switch(:inline, &block)
      def disable!(&block) = switch(nil, &block)

      def enabled?
        !@mode.nil?
      end

      def mode
        @mode
      end

      def record(payload)
        job = { 'jid' => Native.new_jid, 'enqueued_at' => Time.now.to_f }.merge(payload)
        if @mode == :inline
          perform(job)
        else
          @lock.synchronize { @jobs[job['class']] << job }
        end
        job['jid']
      end

      def jobs_for(class_name)
        @lock.synchronize { @jobs[class_name.to_s] }
      end

      def clear(class_name = nil)
        @lock.synchronize { class_name ? @jobs.delete(class_name.to_s) : @jobs.clear }
      end

      def perform_one(class_name)
        job = @lock.synchronize { @jobs[class_name.to_s].shift }
        raise IndexError, "no #{class_name} jobs recorded" unless job

        perform(job)
      end

      def drain(class_name)
        count = 0
        until jobs_for(class_name).empty?
          perform_one(class_name)
          count += 1
        end
        count
      end

      private

      def switch(mode)
        previous = @mode
        @mode = mode
        return unless block_given?

        begin
          yield
        ensure
          @mode = previous
        end
      end

      def perform(job)
        klass = Cogworker.registry[job['class']] || Object.const_get(job['class'])
        klass.new.perform(*job['args'])
      end
    end

    # A private redis-server on a free loopback port, in a temporary
    # directory, for integration tests and demos; stopped by pid.
    #   server = Cogworker::Testing::RedisServer.new
    #   Cogworker.configure { |c| c.redis_url = server.url }
    #   ...
    #   server.stop
    class RedisServer
      attr_reader :port, :url, :dir

      def initialize(*extra_args)
        require 'socket'
        require 'tmpdir'
        @port = TCPServer.open('127.0.0.1', 0) { |s| s.addr[1] }
        @url = "redis://127.0.0.1:#{@port}/0"
        @dir = Dir.mktmpdir('cogworker-redis-')
        @pid = Process.spawn('redis-server', '--port', @port.to_s, '--bind', '127.0.0.1', '--save', '',
                             '--appendonly', 'no', '--dir', @dir, *extra_args, out: File::NULL, err: File::NULL)
        deadline = Time.now + 10
        until cli('PING') == 'PONG'
          raise "redis-server did not start on port #{@port}" if Time.now > deadline

          sleep 0.02
        end
      end

      # One command through redis-cli; its output, stripped.
      def cli(*args)
        IO.popen(['redis-cli', '-p', @port.to_s, *args], err: File::NULL, &:read).to_s.strip
      end

      def stop
        return unless @pid

        Process.kill('KILL', @pid)
        Process.wait(@pid)
        @pid = nil
        require 'fileutils'
        FileUtils.rm_rf(@dir)
      end
    end
  end
end
