# frozen_string_literal: true

require_relative 'application'
Rails.application.initialize!
require_relative '../app/jobs/shop_jobs'
require_relative '../app/mailers/shop_mailer'
ActionMailer::Base.add_delivery_method(:logged, LoggedDelivery)
# A job class from outside the app's directory, as a gem's would be.
require_relative '../../outside/outside_job'
Cogworker.configure do |c|
  c.redis_url = ENV.fetch('COGWORKER_REDIS_URL')
  c.scheduler_poll_interval = 0.2 # retries and set(wait:) are due within a second or two here
end
