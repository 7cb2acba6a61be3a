# frozen_string_literal: true

# An ActiveJob class defined outside the app (as a gem's would be): the
# adapter runs it only if the app allows it by name.
class OutsideJob < ActiveJob::Base
  def perform(word) = JobLog.write("outside #{word}")
end
