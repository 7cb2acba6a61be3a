# frozen_string_literal: true

Rails.application.configure do
  config.cache_classes = false
  config.eager_load = false
end
