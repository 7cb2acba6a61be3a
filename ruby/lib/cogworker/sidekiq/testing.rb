# frozen_string_literal: true

# `require 'cogworker/sidekiq/testing'` (for `require 'sidekiq/testing'`):
# Sidekiq::Testing over cogworker's testing modes, fake by default as
# Sidekiq's is. `HardJob.jobs`, `.drain`, `.clear` and `.perform_one` are
# Cogworker::Job's.
require_relative '../sidekiq'
require_relative '../testing'

module Sidekiq
  # Sidekiq's testing switches.
  module Testing
    class << self
      def fake!(&) = Cogworker::Testing.fake!(&)
      def inline!(&) = Cogworker::Testing.inline!(&)
      def disable!(&) = Cogworker::Testing.disable!(&)
      def enabled? = Cogworker::Testing.enabled?
      def disabled? = !enabled?
      def fake? = Cogworker::Testing.mode == :fake
      def inline? = Cogworker::Testing.mode == :inline
    end
  end

  # Sidekiq::Worker.clear_all and drain_all (Sidekiq::Job's too).
  module Job
    def self.clear_all = Cogworker::Testing.clear
    def self.drain_all = Cogworker::Testing.drain_all
  end
end

Sidekiq::Testing.fake!
