# frozen_string_literal: true

# The app a worker process of test_host_protocol.rb loads.
require_relative 'jobs'
require_relative 'escapes'
