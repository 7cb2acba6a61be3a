# frozen_string_literal: true

module Cogworker
  # Base class of every cogworker error; one subclass per core error kind,
  # raised by the native extension with `field` and `value` set where they
  # apply (the setting or job field, and the offending value).
  class Error < StandardError
    attr_reader :field, :value
  end
  # Client.result of a job that failed for good (status "dead", or
  # "failed" with retries off): its record, status and error.
  class JobFailed < Error
    attr_reader :record, :jid, :status, :error_class, :error_message

    def initialize(record)
      @record = record
      @jid, @status, @error_class, @error_message = record.values_at('jid', 'status', 'error_class', 'error_message')
      super("job #{@jid} #{@status}: #{@error_class}: #{@error_message}")
    end
  end

  # Client.result of a job without a final outcome yet: status "queued",
  # "scheduled", "waiting" (a batch callback or later workflow step not yet
  # handed over), "running", "retrying" or "unknown" (no result kept:
  # pushed without result_ttl, never pushed, or expired; a wait for it
  # returns at once).
  Pending = Struct.new(:jid, :status)

  # What `result(jid)` answers, from the engine's outcome (`[kind, value]`,
  # decided by the core): the value, a raised JobFailed, or a Pending.
  def self.result_of(jid, outcome)
    kind, value = outcome
    case kind
    when 'succeeded' then value
    when 'failed' then raise JobFailed, value
    else Pending.new(jid, value)
    end
  end

  # A setting has an invalid value (the message names it).
  class ConfigError < Error; end
  # A job to push is malformed; nothing was written.
  class InvalidJob < Error; end
  # Talking to Redis failed.
  class RedisError < Error; end
  # A cogworker Lua script misbehaved.
  class ScriptError < Error; end
  # A rate limiter had no capacity to give within the wait allowed.
  class OverLimit < Error; end
  # A push reached the master, but fewer replicas than min_replicas_acked
  # confirmed it in time: the job is queued, and may be lost if the master
  # fails now.
  class NotReplicated < RedisError; end
  # Raised in a job's thread when its time limit (`timeout`) passes. An
  # Exception, not a StandardError, so that a bare `rescue` does not
  # swallow it; however the job then ends, it fails as cogworker::Timeout
  # and is retried by its policy.
  class JobTimeout < Exception; end # rubocop:disable Lint/InheritException
  # A wrapped job (ActiveJob's) names a class that may not run here.
  class UnknownJobClass < Error; end

  # An argument that is not allowed: a job argument that is not a native
  # JSON type (as Sidekiq 7 refuses them), or an ops-API argument of the
  # wrong kind. An ArgumentError, so `rescue ArgumentError` catches it.
  class InvalidArgument < ArgumentError
    attr_reader :field, :value
  end
end
