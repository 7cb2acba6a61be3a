# frozen_string_literal: true

# A mailer as a Rails app writes one; its deliveries (ActionMailer's own
# MailDeliveryJob, through the cogworker adapter) are written to AJ_LOG.
class ShopMailer < ActionMailer::Base
  default from: 'shop@example.com'

  def receipt(to)
    mail(to: to, subject: 'receipt', body: "thanks #{to}")
  end
end

# The delivery method: a line in AJ_LOG per mail.
class LoggedDelivery
  def initialize(_settings); end

  def deliver!(mail)
    JobLog.write("mailed #{mail.subject} #{mail.to.join(',')}")
  end
end

# The app's own delivery job (`config.action_mailer.delivery_job`): still
# only for the app's mailers.
class ShopDeliveryJob < ActionMailer::MailDeliveryJob; end
