# frozen_string_literal: true

module Cogworker
  # Base class of every cogworker error; one subclass per core error kind
  # (raised by the native extension).
  class Error < StandardError; end
  # A setting has an invalid value (the message names it).
  class ConfigError < Error; end
  # A job to push is malformed; nothing was written.
  class InvalidJob < Error; end
  # Talking to Redis failed.
  class RedisError < Error; end
  # A cogworker Lua script misbehaved.
  class ScriptError < Error; end
  # The worker is shutting down.
  class ShuttingDown < Error; end
  # A handler failed.
  class HandlerError < Error; end
end
