# frozen_string_literal: true

# ActiveJob on cogworker, in a Rails application (shop/: railties and
# ActiveJob 6.1 from Debian) that sets `config.active_job.queue_adapter =
# :cogworker`: this process boots it and pushes with perform_later; a
# worker started as `cogworker -r shop` (the app directory) runs the jobs,
# against a private redis-server. Run in its own process (scripts/test):
# loading Rails here must not change what the other Ruby tests see.
$LOAD_PATH.unshift(File.expand_path('../../lib', __dir__))
require 'minitest/autorun'
require 'tmpdir'
# As in a Rails app: Rails first, then the Gemfile's gems.
require 'rails'
require 'active_job/railtie'
require 'cogworker'
require_relative '../waiting'

SHOP = File.expand_path('shop', __dir__)
EXE = File.expand_path('../../exe/cogworker', __dir__)
BOOT_REDIS = Cogworker::Testing::RedisServer.new
ENV['COGWORKER_REDIS_URL'] = BOOT_REDIS.url
ENV['AJ_LOG'] = File.join(Dir.mktmpdir, 'boot.log')
require File.join(SHOP, 'config', 'environment')
ActiveJob::Base.logger = Logger.new(nil)
Minitest.after_run { BOOT_REDIS.stop }

class TestActiveJob < Minitest::Test
  include Waiting

  WRAPPER = 'ActiveJob::QueueAdapters::CogworkerAdapter::JobWrapper'

  def setup
    @redis = Cogworker::Testing::RedisServer.new
    Cogworker.configure { |c| c.redis_url = @redis.url }
    @log = File.join(Dir.mktmpdir, 'jobs.log')
    File.write(@log, '')
    ENV['AJ_LOG'] = @log
    @api = Cogworker::Api.new
    @worker = Process.spawn({ 'COGWORKER_REDIS_URL' => @redis.url, 'AJ_LOG' => @log },
                            'ruby', '-I', File.expand_path('../../lib', __dir__), EXE, '-r', SHOP,
                            '-c', '3', '-q', 'default', '-q', 'mailers', err: File.join(File.dirname(@log), 'worker.err'))
    wait_for('the worker registered') { @api.processes.size == 1 }
  end

  def teardown
    stop_worker
    @redis.stop
  end

  def stop_worker
    return unless @worker

    Process.kill('TERM', @worker)
    status = exit_status(@worker, 30)
    @worker = nil
    assert status.success?, "the worker exits 0 on TERM (#{status.inspect}): #{worker_err}"
  end

  # In the sidekiq layout (docs/sidekiq.md) the adapter writes what
  # Sidekiq's does, its wrapper class: Sidekiq's API shows the job under
  # its own class, and a cogworker worker runs it.
  def test_the_sidekiq_layout_pushes_sidekiqs_wrapper
    stop_worker
    Cogworker.configure { |c| c.layout = 'sidekiq' }
    greet = GreetJob.perform_later('bo', 1, { 'tone' => 'dry', size: 2 })
    client = File.expand_path('../../../core/tests/sidekiq/client.rb', __dir__)
    queued = JSON.parse(IO.popen({ 'REDIS_URL' => @redis.url }, ['ruby', client, 'queue', 'default'], &:read))
    assert_equal [['ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper', 'GreetJob']],
                 queued.map { |job| job.values_at('klass', 'display_class') }
    @worker = Process.spawn({ 'COGWORKER_REDIS_URL' => @redis.url, 'AJ_LOG' => @log },
                            'ruby', '-I', File.expand_path('../../lib', __dir__), EXE, '-r', SHOP,
                            '--layout', 'sidekiq', '-q', 'default', err: File.join(File.dirname(@log), 'worker.err'))
    wait_for('it ran') { lines == ["greet bo 2 dry 2 #{greet.provider_job_id}"] }
    # Sidekiq 8's wrapper has a name of its own; the worker runs it too.
    stop_worker
    Cogworker.configure { |c| c.sidekiq_version = 8 }
    eight = GreetJob.perform_later('cy', 2, { 'tone' => 'warm', size: 1 })
    queued = JSON.parse(IO.popen({ 'REDIS_URL' => @redis.url }, ['ruby', client, 'queue', 'default'], &:read))
    assert_equal ['Sidekiq::ActiveJob::Wrapper'], queued.map { |job| job['klass'] }
    @worker = Process.spawn({ 'COGWORKER_REDIS_URL' => @redis.url, 'AJ_LOG' => @log },
                            'ruby', '-I', File.expand_path('../../lib', __dir__), EXE, '-r', SHOP,
                            '--layout', 'sidekiq', '-q', 'default', err: File.join(File.dirname(@log), 'worker.err'))
    wait_for('it ran') { lines.include?("greet cy 3 warm 1 #{eight.provider_job_id}") }
  ensure
    Cogworker.configure do |c|
      c.layout = 'cogworker'
      c.sidekiq_version = 7
    end
  end

  # What Rails 8.1's continuations ask of an adapter (Debian's Rails is 6.1,
  # without them): `stopping?`, read on the job's thread, false while the
  # worker runs and true once it is told to stop.
  def test_the_adapter_says_when_a_running_job_should_stop
    PatientJob.perform_later
    wait_for('it started') { lines.include?('patient started, stopping? false') }
    stop_worker
    assert_includes lines, 'patient saw stopping? true'
    refute_predicate ActiveJob::Base.queue_adapter, :stopping?, 'no job runs on this thread'
  end

  def test_perform_later_with_strings_numbers_hashes_beside_a_plain_job
    greet = GreetJob.perform_later('ann', 41, { 'tone' => 'warm', size: 3 })
    mail = MailJob.perform_later('a@example.com')
    plain = PlainJob.perform_async('beside')
    wait_for('all three ran') { lines.size == 3 }
    assert_equal ["greet ann 42 warm 3 #{greet.provider_job_id}", 'mail a@example.com mailers',
                  "plain beside #{plain}"].sort, lines.sort
    refute_nil mail.provider_job_id
    history = @api.history(10).map { |e| e['class'] }.sort
    assert_equal %w[GreetJob MailJob PlainJob], history, 'shown under their own class names'
  end

  # limits_concurrency as Solid Queue declares it: one account's jobs one
  # at a time across the worker's 3 slots, another account's beside them.
  def test_limits_concurrency_runs_one_keys_jobs_one_at_a_time
    @api.pause_queue('default')
    3.times { |n| AccountSyncJob.perform_later(1, n) }
    AccountSyncJob.perform_later(2, 0)
    groups = @api.groups('default').map { |group| group.values_at('name', 'size', 'cap') }
    assert_equal [['AccountSyncJob/acct:1', 3, 1], ['AccountSyncJob/acct:2', 1, 1]], groups.sort
    @api.unpause_queue('default')
    wait_for('all four ran') { lines.count { |line| line.start_with?('sync-end') } == 4 }
    spans = lines.map(&:split).group_by { |_, account, n| [account, n] }
                 .transform_values { |rows| rows.to_h { |what, *, at| [what, at.to_f] } }
    account1 = spans.select { |(account, _), _| account == '1' }.values.sort_by { |span| span['sync-start'] }
    account1.each_cons(2) do |before, after|
      assert_operator after['sync-start'], :>=, before['sync-end'], 'one at a time per account'
    end
    other = spans[%w[2 0]]
    assert_operator other['sync-start'], :<, account1.last['sync-start'], 'another account ran beside them'
  end

  # cogworker_flow: a debounce keyed by a Proc of the arguments, scoped
  # to the class; the burst's pushes answer with one provider job id.
  def test_cogworker_flow_debounces_one_keys_burst_into_its_last_arguments
    ids = 3.times.map { |n| ReindexJob.perform_later(1, n).provider_job_id }
    other = ReindexJob.perform_later(2, 0).provider_job_id
    assert_equal 1, ids.uniq.size
    refute_equal ids.first, other
    assert_equal 2, @api.flow_keys.count { |k| k['mode'] == 'debounce' && k['key'].start_with?('ReindexJob/doc:') }
    wait_for('both documents reindexed') { lines.sort == ['reindex 1 2', 'reindex 2 0'] }
    assert_equal [0, 0], [@api.set_size('scheduled'), @api.queue('default')['size']], 'nothing more to run'
  end

  def test_set_wait_and_wait_until_schedule_the_job
    started = Time.now
    later = GreetJob.set(wait: 2.seconds).perform_later('later', 0, {})
    until_job = GreetJob.set(wait_until: started + 1).perform_later('until', 0, {})
    assert_equal 2, @api.set_size('scheduled')
    wait_for('both ran') { lines.size == 2 }
    assert_operator Time.now - started, :>=, 1.9
    assert_equal %w[greet greet], lines.map { |l| l.split.first }
    refute_equal later.provider_job_id, until_job.provider_job_id
  end

  # ActiveJob's priority, lower first, onto cogworker's levels (higher
  # first; 5 the default), which the worker takes highest first.
  def test_priority_is_honoured
    @api.pause_queue('default')
    GreetJob.set(priority: -3).perform_later('urgent', 0, {})
    GreetJob.perform_later('plain', 0, {})
    GreetJob.set(priority: 10).perform_later('whenever', 0, {})
    levels = @api.queue_jobs('default').map { |job| [job['args'][0]['arguments'][0], job['priority']] }
    assert_equal [['urgent', 8], ['plain', nil], ['whenever', 0]], levels
    @api.unpause_queue('default')
    wait_for('all three ran') { lines.size == 3 }
  end

  def test_retry_on_re_enqueues_until_it_succeeds
    FlakyJob.perform_later('k')
    wait_for('the third execution') { lines.include?('flaky k 3') }
    assert_equal ['flaky k 1', 'flaky k 2', 'flaky k 3'], lines
    wait_for('nothing pending') { @api.stats['processed'] == 3 }
    assert_equal [0, 0], [@api.set_size('retry'), @api.set_size('dead')], 'ActiveJob retried it, not cogworker'
  end

  def test_discard_on_drops_the_job
    DiscardedJob.perform_later('d')
    wait_for('it ran and was discarded') { @api.stats['processed'] == 1 }
    assert_equal ['discarded d'], lines
    assert_equal [0, 0, 0], [@api.set_size('retry'), @api.set_size('dead'), @api.stats['failed']]
  end

  def test_an_error_past_retry_on_goes_to_cogworkers_retries_under_the_real_class
    ExhaustedJob.perform_later('e')
    wait_for('it reached cogworker retry') { @api.set_size('retry') == 1 }
    assert_equal ['exhausted e 1', 'exhausted e 2'], lines
    job = @api.entries('retry').first['job']
    assert_equal [WRAPPER, 'ExhaustedJob', 'ExhaustedError'], job.values_at('class', 'wrapped', 'error_class')
    assert_equal ['e'], job['args'][0]['arguments']
  end

  def test_only_active_job_classes_run_through_the_wrapper
    Cogworker::Client.new.push_payloads(
      [{ 'class' => WRAPPER, 'args' => [{ 'job_class' => 'NotAJob', 'arguments' => [] }], 'retry' => 0 },
       { 'class' => 'GreetJob', 'args' => ['x', 1, {}], 'retry' => 0 }]
    )
    wait_for('both refused') { @api.set_size('dead') == 2 }
    errors = @api.entries('dead').map { |e| e['job']['error_class'] }.sort
    assert_equal ['Cogworker::UnknownJobClass', 'cogworker::UnknownHandler'], errors
    assert_empty lines, 'neither NotAJob nor GreetJob was instantiated'
  end

  def test_a_mailer_delivers_later_through_actionmailers_own_job
    ShopMailer.receipt('b@example.com').deliver_later
    wait_for('the mail went out') { lines == ['mailed receipt b@example.com'] }
  end

  # ActionMailer's delivery job calls `mailer.public_send(method, *args)`:
  # a raw payload naming Kernel and system once ran a shell command. Only
  # jobs the app defines run, framework ones only as the app uses them
  # (a delivery only for one of its mailers' actions), others only if
  # allowed by name.
  # The guard stays where the danger is: a mail delivery runs only for one
  # of the app's mailers and actions. Any other ActiveJob class the app has
  # loaded runs, a gem's too (issue #44: turbo-rails' broadcast jobs and an
  # engine's jobs were refused until allowed by name); a name that is no
  # loaded ActiveJob class is refused, pointing at docs/frameworks.md.
  def test_mail_deliveries_are_guarded_and_every_loaded_job_class_runs
    marker = File.join(Dir.mktmpdir, 'pwned')
    mail = lambda do |job_class, mailer, method|
      arguments = [mailer, method, 'deliver_now', { 'args' => ["touch #{marker}"], '_aj_ruby2_keywords' => ['args'] }]
      { 'class' => WRAPPER, 'retry' => 0,
        'args' => [{ 'job_class' => job_class, 'arguments' => arguments, 'job_id' => SecureRandom.uuid }] }
    end
    Cogworker::Client.new.push_payloads(
      [mail.call('ActionMailer::MailDeliveryJob', 'Kernel', 'system'),
       mail.call('ActionMailer::DeliveryJob', 'Kernel', 'system'),
       mail.call('ActionMailer::MailDeliveryJob', 'ShopMailer', 'instance_eval'),
       mail.call('ShopDeliveryJob', 'Kernel', 'system'),
       { 'class' => WRAPPER, 'retry' => 0, 'args' => [{ 'job_class' => 'NoSuchJob', 'arguments' => ['x'] }] },
       { 'class' => WRAPPER, 'retry' => 0, 'args' => [{ 'job_class' => 'Kernel', 'arguments' => ['x'] }] }]
    )
    OutsideJob.perform_later('x')
    wait_for('six refused') { @api.set_size('dead') == 6 }
    dead = @api.entries('dead').map { |e| e['job'] }
    assert_equal ['Cogworker::UnknownJobClass'] * 6, dead.map { |job| job['error_class'] }
    assert(dead.all? { |job| job['error_message'].include?('docs/frameworks.md') }, dead.map { |j| j['error_message'] })
    wait_for('the gem\'s job ran') { lines.include?('outside x') }
    refute File.exist?(marker), 'no shell command ran'
  end

  def test_enqueue_all_pushes_in_one_call
    adapter = ActiveJob::Base.queue_adapter
    assert_instance_of ActiveJob::QueueAdapters::CogworkerAdapter, adapter
    jobs = [GreetJob.new('bulk', 1, {}), MailJob.new('bulk@example.com'), GreetJob.new('bulk', 2, {})]
    assert_equal 3, adapter.enqueue_all(jobs)
    assert jobs.all?(&:provider_job_id)
    wait_for('all three ran') { lines.size == 3 }
  end

  private

  def lines = File.readlines(@log, chomp: true)

  def worker_err = File.read(File.join(File.dirname(@log), 'worker.err')).then { |text| text[-3000..] || text }

  def waiting_detail = "\nworker log:\n#{worker_err}"
end

# An app laid out as `rails new` makes it (generated/): nothing requires
# its jobs, Rails autoloads them. The worker must run them in development
# (eager_load false: ActiveJob::Base is never loaded at boot) as in
# production.
class TestGeneratedApp < Minitest::Test
  include Waiting

  GENERATED = File.expand_path('generated', __dir__)

  def setup
    @redis = Cogworker::Testing::RedisServer.new
    Cogworker.configure { |c| c.redis_url = @redis.url }
    @log = File.join(Dir.mktmpdir, 'jobs.log')
    File.write(@log, '')
  end

  def teardown = @redis.stop

  def test_its_jobs_run_in_development_and_in_production
    [[], %w[-e production]].each do |environment|
      worker = Process.spawn({ 'COGWORKER_REDIS_URL' => @redis.url, 'AJ_LOG' => @log, 'RAILS_ENV' => nil,
                               'RACK_ENV' => nil, 'APP_ENV' => nil },
                             'ruby', '-I', File.expand_path('../../lib', __dir__), EXE, '-r', GENERATED,
                             *environment, err: File.join(File.dirname(@log), 'worker.err'))
      name = environment.empty? ? 'development' : 'production'
      begin
        Cogworker::Client.new.push_payloads(
          [{ 'class' => TestActiveJob::WRAPPER, 'wrapped' => 'HelloJob',
             'args' => [{ 'job_class' => 'HelloJob', 'job_id' => SecureRandom.uuid, 'arguments' => [name] }] }]
        )
        wait_for("the job ran in #{name}") { File.readlines(@log, chomp: true).include?("hello #{name} #{name}") }
      ensure
        Process.kill('TERM', worker)
        assert exit_status(worker, 30).success?
      end
    end
    assert_equal 0, Cogworker::Api.new.set_size('retry'), 'no UnknownHandler failure'
  end

  private

  def waiting_detail = "\nworker log:\n#{File.read(File.join(File.dirname(@log), 'worker.err'))[-3000..]}"
end
