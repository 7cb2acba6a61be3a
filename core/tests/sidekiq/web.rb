# Sidekiq 6.4's Web UI (Debian's ruby-sidekiq) on 127.0.0.1:PORT, reading
# the Redis REDIS_URL names: `ruby web.rb PORT`. tests/sidekiq drives it in
# headless Chromium; it runs until killed.
require "sidekiq"
require "sidekiq/web"
require "rack"
require "rack/handler/webrick"
require "securerandom"

Redis.silence_deprecations = true
Sidekiq.configure_client { |config| config.redis = {url: ENV.fetch("REDIS_URL")} }
app = Rack::Builder.new do
  use Rack::Session::Cookie, secret: SecureRandom.hex(32), same_site: true
  run Sidekiq::Web
end
Rack::Handler::WEBrick.run(app, Host: "127.0.0.1", Port: Integer(ARGV.fetch(0)),
  Logger: WEBrick::Log.new(File::NULL), AccessLog: [])
