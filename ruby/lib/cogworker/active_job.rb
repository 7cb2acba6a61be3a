# frozen_string_literal: true

# `require 'cogworker/active_job'` makes `queue_adapter = :cogworker`
# available (also done by `require 'cogworker'` when ActiveJob is loaded).
require 'active_job/queue_adapters/cogworker_adapter'
