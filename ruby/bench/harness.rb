# frozen_string_literal: true

# What the Ruby benchmarks share: a private redis-server, the FIFO the
# handlers write to, and a process's peak RSS.

ROOT = File.expand_path('../..', __dir__) unless defined?(ROOT)

# A private redis-server (Cogworker::Testing::RedisServer, from the repository).
require File.join(ROOT, 'ruby/lib/cogworker/testing')
Server = Cogworker::Testing::RedisServer

class Fifo
  attr_reader :done, :latencies, :path

  def initialize(path)
    File.mkfifo(path)
    @path = path
    @io = File.open(path, File::RDWR) # never blocks on open, never sees EOF
    @done = 0
    @latencies = []
    @reader = Thread.new do
      buffer = +''
      loop do
        buffer << @io.readpartial(65_536)
        *lines, buffer = buffer.split("\n", -1)
        lines.each { |line| line == 'd' ? @done += 1 : @latencies << line.split(' ')[1].to_f }
      end
    rescue IOError
      nil
    end
  end

  def close
    @reader.kill
    @io.close
  end
end

def peak_rss_mb(pid)
  File.read("/proc/#{pid}/status")[/VmHWM:\s+(\d+)/, 1].to_i / 1024.0
rescue Errno::ENOENT
  0.0
end

