# frozen_string_literal: true

# A minimal Rails application (railties and ActiveJob only) whose jobs run
# on cogworker: the one setting an app changes is the queue adapter.
require 'rails'
require 'active_job/railtie'
require 'action_mailer/railtie'
require 'cogworker'

module Shop
  class Application < Rails::Application
    config.root = File.expand_path('..', __dir__)
    config.eager_load = false
    config.secret_key_base = 'test-only'
    config.logger = Logger.new($stderr, level: :warn)
    config.active_job.queue_adapter = :cogworker
    config.action_mailer.delivery_method = :logged
  end
end
