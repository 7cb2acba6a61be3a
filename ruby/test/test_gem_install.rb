# frozen_string_literal: true

require_relative 'test_helper'
require 'open3'
require 'rubygems/package'
require 'zlib'
require 'etc'

# scripts/build-gem makes two gems, and each installs where users have it:
# the source gem offline (it carries the Rust sources; empty cargo cache, no
# network: build-gem installs it so, in the second Ruby's root, and packs
# the extension that install built into the platform gem), the platform gem
# with no Rust toolchain at all.
class TestGemInstall < Minitest::Test
  include CogworkerTest

  ROOT = File.expand_path('../..', __dir__)
  # What a machine without Rust has: the system's directories, no ~/.cargo/bin.
  BARE_PATH = '/usr/local/bin:/usr/bin:/bin'
  # A guard against vendoring what no build compiles again (other
  # platforms' crates made it 34 MB): the pruned source gem measures 11.1 MB.
  SOURCE_GEM_LIMIT = 12 * 1024 * 1024
  APP = <<~RUBY
    require 'cogworker'
    class Recorder
      include Cogworker::Job
      def perform(n) = File.open(ENV.fetch('RESULTS'), 'a') { |f| f.puts(n) }
    end
  RUBY

  # Built once for all the tests here (or, with COGWORKER_GEMS_BUILT set,
  # already: scripts/test builds them in the background); a failed build
  # fails each of them with its output, without building again.
  def self.gems
    @gems ||= build_gems
    raise "scripts/build-gem failed:\n#{@gems}" if @gems.is_a?(String)

    @gems
  end

  # The gems' paths, or what a failed build printed.
  def self.build_gems
    unless ENV['COGWORKER_GEMS_BUILT']
      out, status = Open3.capture2e(File.join(ROOT, 'scripts/build-gem'))
      return out unless status.success?
    end
    Dir[File.join(ROOT, 'ruby/pkg', "cogworker-#{Cogworker::VERSION}*.gem")]
  end

  def source_gem = self.class.gems.find { |g| File.basename(g) == "cogworker-#{Cogworker::VERSION}.gem" }
  def platform_gem = self.class.gems.find { |g| File.basename(g).start_with?("cogworker-#{Cogworker::VERSION}-") }

  # scripts/build-gem installed the source gem as a user would, offline
  # with an empty cargo home: in the second Ruby's root where it could make
  # one (that install built the platform gem's extension for Ruby 3.3),
  # else here, in ruby/pkg/source-install/. The installed gem pushes a job.
  def test_the_source_gem_is_small_and_installs_offline_and_works
    assert source_gem, self.class.gems.inspect
    assert_operator File.size(source_gem), :<=, SOURCE_GEM_LIMIT, "source gem is #{File.size(source_gem)} bytes"
    script = 'require "cogworker"; puts Cogworker::Client.push("GemCheck", [2**70])'
    here = File.join(ROOT, 'ruby/pkg/source-install')
    out, status = if Dir.exist?(here)
                    push_from_gems_installed_here(here, script)
                  else
                    push_from_gems_installed_in_root(second_ruby_root, script)
                  end
    assert status.success?, out
    assert_match(/\A\h{24}\n\z/, out)
    assert_includes @redis.cli('LRANGE', 'cogworker:queue:default', '0', '-1'), '1180591620717411303424'
  end

  def test_the_platform_gem_installs_and_runs_a_worker_without_rust
    assert platform_gem, self.class.gems.inspect
    assert_match(/-x86_64-linux\.gem\z/, platform_gem)
    refute(BARE_PATH.split(':').any? { |dir| File.executable?(File.join(dir, 'cargo')) })
    Dir.mktmpdir('cogworker-platform-gem-') do |tmp|
      gems = File.join(tmp, 'gems')
      env = { 'PATH' => "#{gems}/bin:#{BARE_PATH}", 'GEM_HOME' => gems, 'GEM_PATH' => gems, 'HOME' => tmp }
      install(env, platform_gem, gems)
      File.write(File.join(tmp, 'app.rb'), APP)
      results = File.join(tmp, 'results.txt')
      env = env.merge('COGWORKER_REDIS_URL' => @redis.url, 'RESULTS' => results)
      worker = Process.spawn(env, File.join(gems, 'bin', 'cogworker'), '-r', './app.rb', '-c', '4',
                             chdir: tmp, unsetenv_others: true, out: File::NULL, err: File.join(tmp, 'worker.log'))
      pusher = 'require "./app"; 100.times { |n| Recorder.perform_async(n) }'
      out, status = Open3.capture2e(env, 'ruby', '-e', pusher, chdir: tmp, unsetenv_others: true)
      assert status.success?, out
      assert_ran_then_stops(worker, results, 100, File.join(tmp, 'worker.log'))
    end
  end

  # Installed by root, a gem must work for every user: each file in it
  # world-readable (cargo vendor keeps some crates' 0640 modes).
  def test_every_file_in_both_gems_is_readable_by_every_user
    [source_gem, platform_gem].each do |gem|
      assert gem, self.class.gems.inspect
      unreadable = gem_files(gem).select { |_, mode| mode.nobits?(0o004) }.map(&:first)
      assert_empty unreadable, File.basename(gem)
    end
  end

  # The platform gem installed by root into a directory of its own, then a
  # worker run from it as `nobody` on jobs root pushed.
  def test_a_gem_root_installed_runs_a_worker_for_an_unprivileged_user
    skip 'installing as root and running as nobody needs root' unless Process.uid.zero?
    setpriv = %w[/usr/bin/setpriv /bin/setpriv].find { |path| File.executable?(path) }
    skip 'no setpriv to run as nobody' unless setpriv
    Dir.mktmpdir('cogworker-system-gem-') do |tmp|
      File.chmod(0o755, tmp)
      gems = File.join(tmp, 'gems')
      env = { 'PATH' => "#{gems}/bin:#{BARE_PATH}", 'GEM_HOME' => gems, 'GEM_PATH' => gems, 'HOME' => tmp }
      out, status = Open3.capture2e(env, 'gem', 'install', '--local', '--no-document', '--install-dir', gems,
                                    platform_gem, umask: 0o022)
      assert status.success?, out
      work = File.join(tmp, 'work')
      Dir.mkdir(work)
      File.chmod(0o777, work)
      File.write(File.join(tmp, 'app.rb'), APP)
      results = File.join(work, 'results.txt')
      env = env.merge('COGWORKER_REDIS_URL' => @redis.url, 'RESULTS' => results, 'HOME' => work)
      worker = Process.spawn(env, setpriv, '--reuid=nobody', '--regid=nogroup', '--clear-groups',
                             File.join(gems, 'bin', 'cogworker'), '-r', File.join(tmp, 'app.rb'), '-c', '2',
                             chdir: work, unsetenv_others: true, out: File::NULL, err: File.join(work, 'worker.log'))
      out, status = Open3.capture2e(env, 'ruby', '-e', "require '#{tmp}/app'; 20.times { |n| Recorder.perform_async(n) }",
                                    unsetenv_others: true)
      assert status.success?, out
      assert_ran_then_stops(worker, results, 20, File.join(work, 'worker.log'))
      assert_equal 'nobody', Etc.getpwuid(File.stat(results).uid).name
    end
  end

  # The platform gem carries a second Ruby's extension too (Debian trixie's
  # Ruby 3.3, built by scripts/build-gem in a root made by
  # scripts/debian-root): installed in that root with no Rust, it runs a
  # worker under Ruby 3.3 on jobs pushed from here, under this Ruby.
  def test_the_platform_gem_runs_a_worker_under_a_second_ruby
    root = second_ruby_root
    assert_equal [host_abi, '3.3'].sort, carried_abis(platform_gem)
    FileUtils.cp(platform_gem, File.join(root, 'tmp'))
    app = File.join(root, 'app')
    FileUtils.rm_rf(app)
    Dir.mkdir(app)
    File.write(File.join(app, 'app.rb'), APP)
    in_root = ['chroot', root, '/usr/bin/env', '-i', 'PATH=/app/gems/bin:/usr/bin:/bin', 'HOME=/root',
               'LANG=C.UTF-8', 'GEM_HOME=/app/gems', 'GEM_PATH=/app/gems']
    out, status = Open3.capture2e(*in_root, 'sh', '-c', 'command -v cargo rustc')
    refute status.success?, "no Rust in the root: #{out}"
    out, status = Open3.capture2e(*in_root, 'gem', 'install', '--local', '--no-document', '--install-dir', '/app/gems',
                                  "/tmp/#{File.basename(platform_gem)}")
    assert status.success?, out
    worker = spawn_child(*in_root, "COGWORKER_REDIS_URL=#{@redis.url}", 'RESULTS=/app/results.txt',
                         'ruby', '-e', 'warn "ruby #{RUBY_VERSION}"; load Gem.bin_path("cogworker", "cogworker")',
                         '--', '-r', '/app/app.rb', '-c', '4', out: File::NULL, err: File.join(app, 'worker.log'))
    50.times { |n| Cogworker::Client.push('Recorder', [n]) }
    log = File.join(app, 'worker.log')
    assert_ran_then_stops(worker, File.join(app, 'results.txt'), 50, log, timeout: 60)
    assert_match(/^ruby 3\.3\./, File.read(log))
  end

  # A Ruby the platform gem has no extension for is told which Rubies it
  # has and to install the source gem (not a bare "cannot load such file").
  def test_a_ruby_the_platform_gem_has_no_extension_for_is_told_what_to_install
    Dir.mktmpdir('cogworker-unpacked-') do |tmp|
      out, status = Open3.capture2e('gem', 'unpack', platform_gem, '--target', tmp)
      assert status.success?, out
      lib = Dir[File.join(tmp, '*', 'lib')].first
      carried = carried_abis(platform_gem)
      FileUtils.rm_rf(File.join(lib, 'cogworker', host_abi))
      out, status = Open3.capture2e({ 'RUBYLIB' => nil }, 'ruby', '-I', lib, '-e', 'require "cogworker"')
      refute status.success?
      others = carried - [host_abi]
      assert_match(/has the extension for Ruby #{Regexp.escape(others.join(' and '))}, not for Ruby #{host_abi}/, out)
      assert_includes out, 'gem install cogworker --platform ruby'
    end
  end

  private

  # The worker ran jobs 0...count (each wrote its number to `results`),
  # then exits 0 on TERM (its log shown if not).
  def assert_ran_then_stops(worker, results, count, log, timeout: 30)
    wait_for("#{count} jobs run by the worker", timeout: timeout) do
      File.exist?(results) && File.readlines(results).size >= count
    end
    assert_equal (0...count).to_a, File.readlines(results).map(&:to_i).sort
    Process.kill('TERM', worker)
    exited = wait_for('the worker to exit after TERM') { Process.wait2(worker, Process::WNOHANG)&.last }
    assert exited.success?, File.read(log)
  end

  def host_abi = RUBY_VERSION[/\A\d+\.\d+/]

  def push_from_gems_installed_here(installed, script)
    assert Dir.exist?(File.join(installed, 'gems', "cogworker-#{Cogworker::VERSION}")), 'the offline install'
    Dir.mktmpdir('cogworker-gem-') do |tmp|
      env = { 'GEM_HOME' => installed, 'GEM_PATH' => installed, 'COGWORKER_REDIS_URL' => @redis.url }
      Open3.capture2e(env, 'ruby', '-e', script, chdir: tmp)
    end
  end

  def push_from_gems_installed_in_root(root, script)
    assert Dir.exist?(File.join(root, 'build/gems/gems', "cogworker-#{Cogworker::VERSION}")), 'the offline install'
    Open3.capture2e('chroot', root, '/usr/bin/env', '-i', 'PATH=/usr/bin:/bin', 'HOME=/root', 'LANG=C.UTF-8',
                    'GEM_HOME=/build/gems', 'GEM_PATH=/build/gems', "COGWORKER_REDIS_URL=#{@redis.url}",
                    'ruby', '-e', script)
  end

  # The Ruby minor versions the platform gem has an extension for.
  def carried_abis(gem)
    gem_files(gem).filter_map { |name, _| name[%r{\Alib/cogworker/(\d+\.\d+)/cogworker_ext\.so\z}, 1] }.sort
  end

  # The Debian trixie root scripts/build-gem built the second extension in.
  def second_ruby_root
    out, err, status = Open3.capture3(File.join(ROOT, 'scripts/debian-root'), 'trixie')
    skip err.strip if [3, 4].include?(status.exitstatus) # Debian's archive unreachable; not root
    assert status.success?, err
    out.strip
  end

  # [name, mode] of every file a gem installs.
  def gem_files(gem)
    files = []
    File.open(gem, 'rb') do |io|
      Gem::Package::TarReader.new(io).each do |entry|
        next unless entry.full_name == 'data.tar.gz'

        Zlib::GzipReader.wrap(entry) do |gz|
          Gem::Package::TarReader.new(gz).each { |file| files << [file.full_name, file.header.mode] }
        end
      end
    end
    files
  end

  def install(env, gem, dir)
    out, status = Open3.capture2e(env, 'gem', 'install', '--local', '--no-document', '--install-dir', dir, gem)
    assert status.success?, out
  end
end
