# frozen_string_literal: true

# Appends a line to the file AJ_LOG names.
class HelloJob < ApplicationJob
  def perform(name)
    File.open(ENV.fetch('AJ_LOG'), 'a') { |f| f.puts("hello #{name} #{Rails.env}") }
  end
end
