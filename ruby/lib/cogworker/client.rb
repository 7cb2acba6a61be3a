# frozen_string_literal: true

require 'json'

module Cogworker
  # Pushes jobs to handlers in any language, by class name.
  #
  #   Cogworker::Client.push('Billing::Charge', [42], queue: 'critical')
  class Client
    def self.push(class_name, args = [], **options)
      Cogworker.client.push(class_name, args, **options)
    end

    def self.push_bulk(class_name, args_list, **options)
      Cogworker.client.push_bulk(class_name, args_list, **options)
    end

    def initialize(config = Cogworker.config)
      @native = Native::Client.new(config.to_h)
    end

    # Returns the jid (nil: a unique job's duplicate holds the lock).
    # `at:` (Time or epoch seconds) schedules it; `unique_for:` seconds
    # refuses duplicates (same class, queue, args) while one is pending.
    def push(class_name, args = [], queue: nil, retry: nil, at: nil, unique_for: nil)
      retry_option = binding.local_variable_get(:retry)
      push_payload(Cogworker.payload(class_name, args, queue: queue, retry: retry_option, at: at, unique_for: unique_for))
    end

    # One round trip for all; returns the jids.
    def push_bulk(class_name, args_list, queue: nil, retry: nil, at: nil, unique_for: nil)
      retry_option = binding.local_variable_get(:retry)
      push_payloads(args_list.map do |args|
        Cogworker.payload(class_name, args, queue: queue, retry: retry_option, at: at, unique_for: unique_for)
      end)
    end

    def push_payload(payload)
      return Testing.record(payload) if Testing.enabled?

      @native.push(Cogworker.encode(payload))
    end

    def push_payloads(payloads)
      return payloads.map { |p| Testing.record(p) } if Testing.enabled?

      @native.push_bulk(payloads.map { |p| Cogworker.encode(p) })
    end
  end
end
