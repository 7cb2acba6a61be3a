//! `cogworker/cogworker_ext`: the native extension under the `cogworker`
//! gem. It converts values and errors and waits without the GVL; the mixin,
//! the CLI and the testing modes are Ruby (`ruby/lib/`); the protocol they
//! speak is the core's `host` module.

mod api;
mod blocking;
mod client;
mod config;
mod convert;
mod errors;
mod limiter;
mod logs;
mod periodic;
mod supervisor;
mod testing;
mod web;
mod worker;
mod workflow;

use magnus::{function, method, prelude::*, Error, RString, Ruby, Value};

/// Raises LoadError unless `package_version` (the gem's) is this native
/// extension's own; `path` is where the extension was found.
fn check_version(ruby: &Ruby, package_version: String, path: String) -> Result<(), Error> {
    cogworker::host::check_version(&package_version, &path)
        .map_err(|message| Error::new(ruby.exception_load_error(), message))
}

/// `[name, attributes]` of the PRODUCER span around a push of `count` jobs
/// of `class_name` to `queue` (not a String: the default queue).
fn producer_span(ruby: &Ruby, class_name: String, queue: Value, count: usize) -> (String, Value) {
    let queue = RString::from_value(queue).and_then(|q| q.to_string().ok());
    let (name, attributes) = cogworker::host::host_push_span(&class_name, queue.as_deref(), count);
    (name, convert::from_json(ruby, &serde_json::Value::Object(attributes)))
}

/// `[name, attributes]` of the PRODUCER span around a push of `count` raw
/// payloads, `first` the first of them.
fn payloads_span(ruby: &Ruby, first: Value, count: usize) -> (String, Value) {
    let first = convert::value(ruby, first);
    let (name, attributes) = cogworker::host::host_payloads_span(Some(&first), count);
    (name, convert::from_json(ruby, &serde_json::Value::Object(attributes)))
}

/// The attributes a push's span gets once the push returned `jids`.
fn message_attributes(ruby: &Ruby, jids: Vec<Option<String>>) -> Value {
    let attributes = cogworker::host::host_message_attributes(&jids);
    convert::from_json(ruby, &serde_json::Value::Object(attributes))
}

/// `[description, exception event attributes]` of a failed job's span.
fn span_failure(ruby: &Ruby, class_name: Option<String>, message: Option<String>) -> (String, Value) {
    let (description, attributes) = cogworker::host::host_span_failure(class_name.as_deref(), message.as_deref());
    (
        description,
        convert::from_json(ruby, &serde_json::Value::Object(attributes)),
    )
}

/// Writes an engine line forwarded to the default logger in the core's
/// format (text or JSON, as `init_logging` chose), its fields as they are.
fn log_line(level: String, thread: String, message: String, fields: Vec<(String, String)>) {
    cogworker::logging::host_line(&level, &thread, &message, &fields);
}

/// Writes a Ruby log entry in the core's format: one format for the whole
/// process, the entry's fields named by the core.
#[allow(clippy::too_many_arguments)] // one per part of an entry
fn log_record(
    level: String,
    thread: Option<String>,
    is_main: bool,
    message: String,
    logger: String,
    jid: Option<String>,
    job_class: Option<String>,
    exception: Option<String>,
) {
    let job = jid.as_deref().map(|jid| (jid, job_class.as_deref().unwrap_or("")));
    cogworker::logging::host_record(
        &level,
        thread.as_deref(),
        is_main,
        &message,
        &logger,
        job,
        exception.as_deref(),
    );
}

/// The line the worker command prints when its app cannot be loaded.
fn app_not_loaded(app: String, why: String) -> String {
    cogworker::host::app_not_loaded(&app, &why)
}

/// `event` if hooks may be registered on it; else raises ConfigError naming
/// the lifecycle events there are (the core's list).
fn lifecycle_event(ruby: &Ruby, event: String) -> Result<&'static str, Error> {
    cogworker::host::lifecycle_event(&event).map_err(|e| errors::to_ruby(ruby, e))
}

/// Logs, in the core's words, that a hook raised (it changes nothing).
fn hook_raised(what: String, hook: String, error_class: String, message: String, backtrace: Vec<String>) {
    cogworker::host::hook_raised(&what, &hook, &error_class, &message, &backtrace);
}

/// Logs a warning if `value`, given as `flag` on the command line, holds
/// a password (`ps` shows it to every user).
fn warn_secret_on_command_line(flag: String, value: String) {
    cogworker::host::warn_secret_on_command_line(&flag, &value);
}

#[magnus::init(name = "cogworker_ext")]
fn init(ruby: &Ruby) -> Result<(), Error> {
    let native = ruby.define_module("Cogworker")?.define_module("Native")?;
    native.define_module_function("new_jid", function!(cogworker::new_jid, 0))?;
    native.define_module_function(
        "after_fork_in_child",
        function!(cogworker::runtime::after_fork_in_child, 0),
    )?;
    native.define_module_function("init_logging", function!(cogworker::logging::init, 1))?;
    native.define_module_function("init_cli_logging", function!(cogworker::host::init_cli_logging, 2))?;
    native.define_module_function("check_version", function!(check_version, 2))?;
    native.define_module_function("log_line", function!(log_line, 4))?;
    native.define_module_function("log_record", function!(log_record, 8))?;
    native.define_module_function("init_log_forwarding", function!(logs::init_log_forwarding, 0))?;
    native.define_module_function("run_log_forwarding", function!(logs::run_log_forwarding, 1))?;
    native.define_module_function("stop_log_forwarding", function!(logs::stop_log_forwarding, 0))?;
    native.define_module_function("producer_span", function!(producer_span, 3))?;
    native.define_module_function("payloads_span", function!(payloads_span, 2))?;
    native.define_module_function("slot_thread_name", function!(cogworker::host::slot_thread_name, 1))?;
    native.define_module_function("message_attributes", function!(message_attributes, 1))?;
    native.define_module_function("span_failure", function!(span_failure, 2))?;
    native.define_module_function("warn_secret_on_command_line", function!(warn_secret_on_command_line, 2))?;
    native.define_module_function("lifecycle_event", function!(lifecycle_event, 1))?;
    native.define_module_function("app_not_loaded", function!(app_not_loaded, 2))?;
    native.define_module_function("hook_raised", function!(hook_raised, 5))?;
    native.define_module_function("settings", function!(config::settings, 0))?;
    native.define_module_function("worker_flags", function!(config::worker_flags, 0))?;
    native.define_module_function("command_flags", function!(config::command_flags, 1))?;
    native.define_module_function("command_connection", function!(config::command_connection, 2))?;
    native.define_module_function("settings_from_flags", function!(config::settings_from_flags, 1))?;
    native.define_module_function("prepare_job", function!(client::prepare_job, 3))?;
    native.define_module_function("check_options", function!(client::check_options, 2))?;
    native.define_module_function("prepare_payload", function!(client::prepare_payload, 1))?;
    native.define_module_function("batch_callback", function!(workflow::batch_callback, 5))?;
    native.define_module_function("callback_jids", function!(workflow::callback_jids, 2))?;
    native.define_module_function("workflow_step", function!(workflow::workflow_step, 4))?;
    native.define_module_function("workflow_group", function!(workflow::workflow_group, 2))?;
    native.define_module_function("workflow_shaped", function!(workflow::workflow_shaped, 4))?;
    native.define_module_function("api_calls", function!(api::api_calls, 0))?;
    native.define_module_function("set_testing_mode", function!(testing::set_mode, 1))?;
    native.define_module_function("testing_mode", function!(testing::mode, 0))?;
    native.define_module_function("testing_jobs", function!(testing::jobs, 1))?;
    native.define_module_function("testing_perform_one", function!(testing::perform_one, 2))?;
    native.define_module_function("testing_drain", function!(testing::drain, 2))?;
    native.define_module_function("testing_run", function!(testing::run, 2))?;
    native.define_module_function("testing_clear", function!(testing::clear, 1))?;
    native.define_module_function("testing_result", function!(testing::result, 1))?;
    native.define_module_function("testing_status", function!(testing::status, 1))?;
    native.define_module_function("testing_unknown_class", function!(testing::unknown_class, 1))?;
    native.define_module_function("admin_commands", function!(api::admin_commands, 0))?;

    native.define_module_function("bind_to_parent", function!(supervisor::bind_to_parent, 1))?;
    native.define_module_function("child_parent_gone", function!(supervisor::child_parent_gone, 1))?;
    native.define_module_function("child_failed", function!(supervisor::child_failed, 4))?;

    let supervisor = native.define_class("Supervisor", ruby.class_object())?;
    supervisor.define_singleton_method("new", function!(supervisor::RbSupervisor::new, 1))?;
    supervisor.define_method("run", method!(supervisor::RbSupervisor::run, 1))?;
    supervisor.define_method("signal", method!(supervisor::RbSupervisor::signal, 1))?;

    let periodic = native.define_class("Periodic", ruby.class_object())?;
    periodic.define_singleton_method("new", function!(periodic::RbPeriodic::new, 4))?;
    periodic.define_method("pjid", method!(periodic::RbPeriodic::pjid, 0))?;
    periodic.define_method("entry", method!(periodic::RbPeriodic::entry, 0))?;

    let config = native.define_class("Config", ruby.class_object())?;
    config.define_singleton_method("new", function!(config::RbConfig::new, 1))?;
    config.define_method("set", method!(config::RbConfig::set, 2))?;
    config.define_method("get", method!(config::RbConfig::get, 1))?;

    let client = native.define_class("Client", ruby.class_object())?;
    client.define_singleton_method("new", function!(client::RbClient::new, 1))?;
    client.define_method("push_many", method!(client::RbClient::push_many, 5))?;
    client.define_method("push_payloads", method!(client::RbClient::push_payloads, 4))?;
    client.define_method("status", method!(client::RbClient::status, 1))?;
    client.define_method("cancel", method!(client::RbClient::cancel, 1))?;
    client.define_method("result", method!(client::RbClient::result, 2))?;

    let limiter = native.define_class("Limiter", ruby.class_object())?;
    limiter.define_singleton_method("new", function!(limiter::RbLimiter::new, 5))?;
    limiter.define_method("name", method!(limiter::RbLimiter::name, 0))?;
    limiter.define_method("kind", method!(limiter::RbLimiter::kind, 0))?;
    limiter.define_method("limit", method!(limiter::RbLimiter::limit, 0))?;
    limiter.define_method("acquire", method!(limiter::RbLimiter::acquire, 1))?;
    let lease = native.define_class("Lease", ruby.class_object())?;
    lease.define_method("release", method!(limiter::RbLease::release, 0))?;

    let delivery = native.define_class("Delivery", ruby.class_object())?;
    delivery.define_method("info", method!(worker::RbDelivery::info, 0))?;
    delivery.define_method("payload", method!(worker::RbDelivery::payload, 0))?;
    delivery.define_method("cancelled", method!(worker::RbDelivery::cancelled, 0))?;
    delivery.define_method("progress", method!(worker::RbDelivery::progress, 3))?;
    delivery.define_method("checkpoint", method!(worker::RbDelivery::checkpoint, 1))?;
    delivery.define_method("cursor", method!(worker::RbDelivery::cursor, 0))?;
    delivery.define_method("stopping", method!(worker::RbDelivery::stopping, 0))?;
    delivery.define_method("interrupt", method!(worker::RbDelivery::interrupt, 0))?;
    delivery.define_method("iterated", method!(worker::RbDelivery::iterated, 2))?;
    delivery.define_method("abandon", method!(worker::RbDelivery::abandon, 1))?;
    delivery.define_method("job_span", method!(worker::RbDelivery::job_span, 0))?;

    let worker = native.define_class("Worker", ruby.class_object())?;
    worker.define_singleton_method("new", function!(worker::RbWorker::new, 4))?;
    worker.define_method("start", method!(worker::RbWorker::start, 0))?;
    worker.define_method("run_slot", method!(worker::RbWorker::run_slot, 2))?;
    worker.define_method("run_hooks", method!(worker::RbWorker::run_hooks, 1))?;
    worker.define_method("run_timekeeper", method!(worker::RbWorker::run_timekeeper, 1))?;
    worker.define_method(
        "run_client_middleware",
        method!(worker::RbWorker::run_client_middleware, 1),
    )?;
    worker.define_method("join", method!(worker::RbWorker::join, 2))?;
    worker.define_method("wait", method!(worker::RbWorker::wait, 1))?;
    worker.define_method("quiet", method!(worker::RbWorker::quiet, 0))?;
    worker.define_method("stop", method!(worker::RbWorker::stop, 0))?;
    worker.define_method("identity", method!(worker::RbWorker::identity, 0))?;
    worker.define_method("lifecycle", method!(worker::RbWorker::lifecycle, 0))?;
    worker.define_method("given_back", method!(worker::RbWorker::given_back, 0))?;
    worker.define_method("busy", method!(worker::RbWorker::busy, 0))?;
    worker.define_method("log_busy", method!(worker::RbWorker::log_busy, 0))?;
    worker.define_method("slot_ended_early", method!(worker::RbWorker::slot_ended_early, 1))?;
    worker.define_singleton_method("log_thread_stacks", function!(worker::RbWorker::log_thread_stacks, 1))?;
    worker.define_method("signal", method!(worker::RbWorker::signal, 1))?;
    worker.define_method("join_slots", method!(worker::RbWorker::join_slots, 0))?;
    worker.define_method("exit_at_once", method!(worker::RbWorker::exit_at_once, 1))?;
    native.const_set("WORKER_SIGNALS", cogworker::host::WORKER_SIGNALS.to_vec())?;
    native.const_set("LIFECYCLE_EVENTS", cogworker::host::LIFECYCLE_EVENTS.to_vec())?;
    native.const_set("EXIT_USAGE", cogworker::host::EXIT_USAGE)?;
    native.const_set("TRACE_CONTEXT_FIELDS", cogworker::host::TRACE_CONTEXT_FIELDS.to_vec())?;
    native.const_set("TRACER_NAME", cogworker::host::TRACER_NAME)?;
    native.const_set("WAIT_SLICE", cogworker::host::WAIT_SLICE.as_secs_f64())?;
    native.const_set("LOGGING_FLAGS", cogworker::host::LOGGING_FLAGS.to_vec())?;
    native.const_set("TIME_LIMIT_PASSED", cogworker::host::TIME_LIMIT_PASSED)?;
    let threads = ruby.hash_new();
    for (role, name) in cogworker::host::HOST_THREADS {
        threads.aset(role, name)?;
    }
    native.const_set("THREAD_NAMES", threads)?;
    native.const_set("CHILD_FAILED", cogworker::host::supervisor::CHILD_FAILED)?;
    let push_options: Vec<&str> = cogworker::host::PUSH_OPTIONS.iter().map(|(name, _)| *name).collect();
    native.const_set("PUSH_OPTIONS", push_options)?;

    let api = native.define_class("Api", ruby.class_object())?;
    api.define_singleton_method("new", function!(api::RbApi::new, 1))?;
    api.define_singleton_method("of_client", function!(api::RbApi::of_client, 1))?;
    api.define_method("call", method!(api::RbApi::call, 2))?;
    api.define_method("admin", method!(api::RbApi::admin, 2))?;
    api.define_method("watch", method!(api::RbApi::watch, 1))?;
    let watch = native.define_class("Watch", ruby.class_object())?;
    watch.define_method("next", method!(api::RbWatch::next, 1))?;

    let web = native.define_class("WebServer", ruby.class_object())?;
    web.define_singleton_method("new", function!(web::RbWebServer::new, 3))?;
    web.define_method("url", method!(web::RbWebServer::url, 0))?;
    web.define_method("stop", method!(web::RbWebServer::stop, 0))?;
    web.define_method("address_line", method!(web::RbWebServer::address_line, 0))?;
    web.define_method("stop_on_signal", method!(web::RbWebServer::stop_on_signal, 1))?;
    web.define_method("wait", method!(web::RbWebServer::wait, 1))?;

    let redis = native.define_class("RedisServer", ruby.class_object())?;
    redis.define_singleton_method("new", function!(web::RbRedisServer::new, 2))?;
    redis.define_method("info", method!(web::RbRedisServer::info, 0))?;
    redis.define_method("spawn", method!(web::RbRedisServer::spawn, 0))?;
    redis.define_method("kill", method!(web::RbRedisServer::kill, 0))?;
    resolve_wrapped_classes(ruby);
    Ok(())
}

/// Each `#[magnus::wrap]` type finds its Ruby class on first use, under a
/// once-lock, by calling into Ruby, which may switch threads. Ten slot
/// threads wrapping their first deliveries at once deadlocked there: one
/// held the lock waiting for the GVL, another held the GVL waiting for the
/// lock. Resolved here, while loading, nothing is left to race.
fn resolve_wrapped_classes(ruby: &Ruby) {
    use magnus::TypedData;
    let _ = config::RbConfig::class(ruby);
    let _ = periodic::RbPeriodic::class(ruby);
    let _ = client::RbClient::class(ruby);
    let _ = worker::RbDelivery::class(ruby);
    let _ = worker::RbWorker::class(ruby);
    let _ = api::RbApi::class(ruby);
    let _ = web::RbWebServer::class(ruby);
    let _ = web::RbRedisServer::class(ruby);
    let _ = supervisor::RbSupervisor::class(ruby);
}
