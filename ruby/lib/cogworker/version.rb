# frozen_string_literal: true

module Cogworker
  VERSION = '0.1.0'
end
