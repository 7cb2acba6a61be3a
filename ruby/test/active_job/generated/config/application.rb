# frozen_string_literal: true

# An app as `rails new` generates it (railties and ActiveJob only, the
# Gemfile's gems required after Rails as Bundler.require does): its jobs
# are autoloaded from app/jobs, nothing requires them.
require 'rails'
require 'active_job/railtie'
require 'cogworker'

module Generated
  class Application < Rails::Application
    config.load_defaults 6.1
    config.root = File.expand_path('..', __dir__)
    config.secret_key_base = 'test-only'
    config.logger = Logger.new($stderr, level: :warn)
    config.active_job.queue_adapter = :cogworker
  end
end
