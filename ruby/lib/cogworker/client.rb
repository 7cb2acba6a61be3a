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

    # Returns the jid. `at:` (Time or epoch seconds) schedules it.
    def push(class_name, args = [], queue: nil, retry: nil, at: nil)
      push_payload(Cogworker.payload(class_name, args, queue: queue, retry: binding.local_variable_get(:retry), at: at))
    end

    # One round trip for all; returns the jids.
    def push_bulk(class_name, args_list, queue: nil, retry: nil, at: nil)
      retry_option = binding.local_variable_get(:retry)
      push_payloads(args_list.map { |args| Cogworker.payload(class_name, args, queue: queue, retry: retry_option, at: at) })
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
