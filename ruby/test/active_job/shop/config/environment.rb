# frozen_string_literal: true

require_relative 'application'
Rails.application.initialize!
require_relative '../app/jobs/shop_jobs'
Cogworker.configure do |c|
  c.redis_url = ENV.fetch('COGWORKER_REDIS_URL')
  c.scheduler_poll_interval = 0.2 # retries and set(wait:) are due within a second or two here
end
