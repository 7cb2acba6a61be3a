# frozen_string_literal: true

require_relative 'test_helper'
require 'open3'

# `gem build` + `gem install --local` works offline: the gem carries the
# Rust sources it needs, and installs with an empty cargo cache and no network.
class TestGemInstall < Minitest::Test
  ROOT = File.expand_path('../..', __dir__)

  def test_the_gem_builds_and_installs_offline_and_works
    out, status = Open3.capture2e(File.join(ROOT, 'scripts/build-gem'))
    assert status.success?, out
    gem = Dir[File.join(ROOT, 'ruby/pkg/cogworker-*.gem')].max_by { |f| File.mtime(f) }
    Dir.mktmpdir('cogworker-gem-') do |tmp|
      env = { 'CARGO_HOME' => File.join(tmp, 'empty-cargo-home'), 'CARGO_NET_OFFLINE' => 'true',
              'GEM_HOME' => File.join(tmp, 'gems'), 'GEM_PATH' => File.join(tmp, 'gems') }
      out, status = Open3.capture2e(env, 'gem', 'install', '--local', '--no-document',
                                    '--install-dir', File.join(tmp, 'gems'), gem)
      assert status.success?, out
      redis = RedisServer.new
      begin
        script = 'require "cogworker"; puts Cogworker::Client.push("GemCheck", [2**70])'
        out, status = Open3.capture2e(env.merge('COGWORKER_REDIS_URL' => redis.url), 'ruby', '-e', script,
                                      chdir: tmp)
        assert status.success?, out
        assert_match(/\A\h{24}\n\z/, out)
        assert_includes redis.cli('LRANGE', 'cogworker:queue:default', '0', '-1'), '1180591620717411303424'
      ensure
        redis.stop
      end
    end
  end
end
