# frozen_string_literal: true

Rails.application.configure do
  config.cache_classes = true
  config.eager_load = true
end
