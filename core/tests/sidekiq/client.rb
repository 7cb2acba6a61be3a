# Sidekiq 6.4's client and API (Debian's ruby-sidekiq) on the Redis that
# REDIS_URL names, for core/tests/sidekiq_layout.rs: `ruby client.rb
# <command> [argument]` prints one line of JSON.
#   push             pushes as a Sidekiq app does: now, in 1 s, one that
#                    fails (retry 2, with its backtrace), one of
#                    ActiveJob's wrapper; prints their jids
#   inspect          what Sidekiq's API sees: processes, running jobs,
#                    retries, counts
#   quiet IDENTITY   what the Web UI's "Quiet" button does
#   stop IDENTITY    what the Web UI's "Stop" button does
#   busy_page        GET /busy of Sidekiq::Web: the page's HTML
#   queue NAME       the jobs waiting on queue NAME, as Sidekiq::Queue reads
#                    them: class, the class Sidekiq displays, args
#   accounts FILE    pushes the jobs listed in FILE (a JSON array of
#                    [token, millis, fail_once, delay]) as Account jobs,
#                    delayed ones with perform_in; prints their count
#   fail RETRY ...   pushes a Fail job with `retry` RETRY and `backtrace`
#                    true; prints its jid
#   sets             the retry and dead sets' entries, as their items with
#                    the backtrace Sidekiq's API decodes
require "sidekiq"
require "sidekiq/api"
require "json"

Redis.silence_deprecations = true
Sidekiq.configure_client { |config| config.redis = {url: ENV.fetch("REDIS_URL")} }
Sidekiq.logger.level = Logger::WARN

command, argument = ARGV
case command
when "push"
  jids = {
    now: Sidekiq::Client.push("class" => "HardJob", "args" => [1, "a"]),
    later: Sidekiq::Client.push("class" => "HardJob", "args" => [2, "b"], "at" => Time.now.to_f + 1),
    failing: Sidekiq::Client.push("class" => "Failing", "args" => [], "retry" => 2, "backtrace" => true),
    wrapped: Sidekiq::Client.push(
      "class" => "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper",
      "wrapped" => "HardJob", "queue" => "default",
      "args" => [{"job_class" => "HardJob", "arguments" => [3]}]
    )
  }
  puts JSON.generate(jids)
when "inspect"
  processes = Sidekiq::ProcessSet.new.map do |process|
    {identity: process.identity, busy: process["busy"], quiet: process.stopping?,
     queues: process["queues"], concurrency: process["concurrency"], rss: process["rss"]}
  end
  running = Sidekiq::Workers.new.map do |identity, _tid, work|
    {identity: identity, queue: work["queue"], jid: work["payload"]["jid"], class: work["payload"]["class"]}
  end
  retries = Sidekiq::RetrySet.new.map do |entry|
    {jid: entry.jid, klass: entry.klass, retry_count: entry["retry_count"], error_class: entry["error_class"],
     backtrace: entry.error_backtrace, failed_at: entry["failed_at"], at: entry.at.to_f}
  end
  stats = Sidekiq::Stats.new
  puts JSON.generate(
    processes: processes, running: running, retries: retries,
    processed: stats.processed, failed: stats.failed, enqueued: stats.enqueued,
    scheduled: stats.scheduled_size, queues: Sidekiq::Queue.all.map(&:name)
  )
when "quiet", "stop"
  process = Sidekiq::ProcessSet.new.find { |p| p.identity == argument } or abort("no process #{argument}")
  (command == "quiet") ? process.quiet! : process.stop!
  puts JSON.generate(sent: command)
when "busy_page"
  require "rack"
  require "sidekiq/web"
  app = Rack::Builder.new do
    use Rack::Session::Cookie, secret: "x" * 64, same_site: true
    run Sidekiq::Web
  end
  response = Rack::MockRequest.new(app).get("/busy")
  puts JSON.generate(status: response.status, body: response.body)
when "accounts"
  jobs = JSON.parse(File.read(argument))
  jobs.each_slice(1000) do |slice|
    now, later = slice.partition { |job| job[3].to_f <= 0 }
    Sidekiq::Client.push_bulk("class" => "Account", "args" => now.map { |job| job.first(3) }) unless now.empty?
    later.each { |job| Sidekiq::Client.push("class" => "Account", "args" => job.first(3), "at" => Time.now.to_f + job[3]) }
  end
  puts JSON.generate(jobs.size)
when "fail"
  puts JSON.generate(Sidekiq::Client.push("class" => "Fail", "args" => ARGV[2..].to_a, "retry" => Integer(argument),
    "backtrace" => true))
when "sets"
  sets = {retry: Sidekiq::RetrySet.new, dead: Sidekiq::DeadSet.new}.transform_values do |set|
    set.map { |entry| entry.item.merge("error_backtrace" => entry.error_backtrace, "score" => entry.score) }
  end
  puts JSON.generate(sets)
when "queue"
  jobs = Sidekiq::Queue.new(argument).map do |job|
    {klass: job.klass, display_class: job.display_class, args: job.args}
  end
  puts JSON.generate(jobs)
else
  abort "unknown command #{command.inspect}"
end
