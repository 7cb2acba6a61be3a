//! `cogworker._core`: the native module under the `cogworker` Python
//! package. It converts values and errors and releases the GIL around every
//! blocking call, nothing more: the decorator, the CLI and the testing
//! modes are Python (`python/cogworker/`); the protocol they speak is the
//! core's `host` module.

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

use pyo3::prelude::*;

/// Call in a forked child (registered with `os.register_at_fork`): the
/// parent's runtime and connections are abandoned, never touched.
#[pyfunction]
fn after_fork_in_child() {
    cogworker::runtime::after_fork_in_child();
}

/// Routes the core's log lines to stderr (one line each, or JSON).
#[pyfunction]
#[pyo3(signature = (json=false))]
fn init_logging(json: bool) {
    cogworker::logging::init(json);
}

/// Writes a Python log record in the core's format (text or JSON, as
/// `init_logging` chose): one format for the whole process, the record's
/// fields named by the core.
#[pyfunction]
#[pyo3(signature = (level, thread, is_main, message, logger, jid=None, job_class=None, exception=None))]
#[allow(clippy::too_many_arguments)] // one per part of a record
fn log_record(
    level: &str,
    thread: Option<&str>,
    is_main: bool,
    message: &str,
    logger: &str,
    jid: Option<&str>,
    job_class: Option<&str>,
    exception: Option<&str>,
) {
    let job = jid.map(|jid| (jid, job_class.unwrap_or("")));
    cogworker::logging::host_record(level, thread, is_main, message, logger, job, exception);
}

/// A command line's log lines: JSON or text; `verbose`: the engine's
/// debug lines too (COGWORKER_LOG=debug unless set).
#[pyfunction]
fn init_cli_logging(json: bool, verbose: bool) {
    cogworker::host::init_cli_logging(json, verbose);
}

/// The line the worker command prints when its app cannot be loaded.
#[pyfunction]
fn app_not_loaded(app: &str, why: &str) -> String {
    cogworker::host::app_not_loaded(app, why)
}

/// `event` if hooks may be registered on it; else raises ConfigError naming
/// the lifecycle events there are (the core's list).
#[pyfunction]
fn lifecycle_event(event: &str) -> PyResult<&'static str> {
    cogworker::host::lifecycle_event(event).map_err(errors::to_py)
}

/// Logs, in the core's words, that a hook raised (it changes nothing).
#[pyfunction]
fn hook_raised(what: &str, hook: &str, error_class: &str, message: &str, backtrace: Vec<String>) {
    cogworker::host::hook_raised(what, hook, error_class, message, &backtrace);
}

/// Logs a warning if `value`, given as `flag` on the command line, holds
/// a password (`ps` shows it to every user).
#[pyfunction]
fn warn_secret_on_command_line(flag: &str, value: &str) {
    cogworker::host::warn_secret_on_command_line(flag, value);
}

/// Raises ImportError unless `package_version` (the Python package's) is
/// this native module's own; `path` is where the module was found.
#[pyfunction]
fn check_version(package_version: &str, path: &str) -> PyResult<()> {
    cogworker::host::check_version(package_version, path).map_err(pyo3::exceptions::PyImportError::new_err)
}

/// A new 24-hex-character job id.
#[pyfunction]
fn new_jid() -> String {
    cogworker::new_jid()
}

/// `(long, short, setting, kind, help)` of every worker flag (kind: text,
/// whole, seconds, boolean or repeated).
#[pyfunction]
fn worker_flags() -> Vec<(String, Option<&'static str>, &'static str, &'static str, &'static str)> {
    cogworker::host::flags::worker_flags()
        .into_iter()
        .map(|f| (f.long, f.short, f.setting, f.value.name(), f.help))
        .collect()
}

/// `(long, metavar or None (a switch), help)` of each flag of `command`
/// (web, metrics or an admin command).
#[pyfunction]
fn command_flags(command: &str) -> Vec<(&'static str, Option<&'static str>, String)> {
    cogworker::host::command_flags(command)
        .into_iter()
        .map(|f| (f.long, f.metavar, f.help))
        .collect()
}

/// `(redis_url, namespace)` the flags `given` to `command` say (None: the
/// configuration's); a secret among them is warned of.
#[pyfunction]
fn command_connection(command: &str, given: Vec<(String, Vec<String>)>) -> PyResult<(Option<String>, Option<String>)> {
    cogworker::host::command_connection(command, &given).map_err(errors::to_py)
}

/// The settings `(setting, [text, ...])` pairs of flags give.
#[pyfunction]
fn settings_from_flags(py: Python<'_>, given: Vec<(String, Vec<String>)>) -> PyResult<Vec<(String, Bound<'_, PyAny>)>> {
    let settings = cogworker::host::flags::settings_from_flags(&given).map_err(errors::to_py)?;
    settings
        .into_iter()
        .map(|(name, value)| {
            let value = value.to_json(&name).map_err(errors::to_py)?;
            Ok((name, convert::to_py(py, &value)?))
        })
        .collect()
}

/// `(name, attributes)` of the PRODUCER span around a push of `count`
/// jobs of `class_name` to `queue` (not text: the default queue).
#[pyfunction]
fn producer_span<'py>(
    py: Python<'py>,
    class_name: &str,
    queue: Option<&Bound<'py, PyAny>>,
    count: usize,
) -> PyResult<(String, Bound<'py, PyAny>)> {
    let queue = queue.and_then(|q| q.extract::<String>().ok());
    let (name, attributes) = cogworker::host::host_push_span(class_name, queue.as_deref(), count);
    Ok((name, convert::map_to_py(py, &attributes)?))
}

/// The name of slot thread `index` (the same in every host).
#[pyfunction]
fn slot_thread_name(index: usize) -> String {
    cogworker::host::slot_thread_name(index)
}

/// `(name, attributes)` of the PRODUCER span around a push of `count` raw
/// payloads, `first` the first of them.
#[pyfunction]
fn payloads_span<'py>(
    py: Python<'py>,
    first: Option<&Bound<'py, PyAny>>,
    count: usize,
) -> PyResult<(String, Bound<'py, PyAny>)> {
    let first = first.map(convert::value);
    let (name, attributes) = cogworker::host::host_payloads_span(first.as_ref(), count);
    Ok((name, convert::map_to_py(py, &attributes)?))
}

/// The attributes a push's span gets once the push returned `jids`.
#[pyfunction]
fn message_attributes(py: Python<'_>, jids: Vec<Option<String>>) -> PyResult<Bound<'_, PyAny>> {
    convert::map_to_py(py, &cogworker::host::host_message_attributes(&jids))
}

/// `(description, exception event attributes)` of a failed job's span.
#[pyfunction]
#[pyo3(signature = (class_name, message))]
fn span_failure<'py>(
    py: Python<'py>,
    class_name: Option<&str>,
    message: Option<&str>,
) -> PyResult<(String, Bound<'py, PyAny>)> {
    let (description, attributes) = cogworker::host::host_span_failure(class_name, message);
    Ok((description, convert::map_to_py(py, &attributes)?))
}

/// `(name, help)` of every setting.
#[pyfunction]
fn settings() -> Vec<(&'static str, &'static str)> {
    cogworker::SETTINGS.iter().map(|s| (s.name, s.help)).collect()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<config::PyConfig>()?;
    m.add_class::<client::PyClient>()?;
    m.add_class::<worker::PyWorker>()?;
    m.add_class::<worker::PyDelivery>()?;
    m.add_class::<api::PyApi>()?;
    m.add_class::<api::PyWatch>()?;
    m.add_class::<web::PyWebServer>()?;
    m.add_class::<web::PyRedisServer>()?;
    m.add_class::<supervisor::PySupervisor>()?;
    m.add_function(wrap_pyfunction!(supervisor::bind_to_parent, m)?)?;
    m.add_function(wrap_pyfunction!(supervisor::child_parent_gone, m)?)?;
    m.add_function(wrap_pyfunction!(supervisor::child_failed, m)?)?;
    m.add_function(wrap_pyfunction!(after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(init_logging, m)?)?;
    m.add_function(wrap_pyfunction!(init_cli_logging, m)?)?;
    m.add_function(wrap_pyfunction!(log_record, m)?)?;
    m.add_function(wrap_pyfunction!(logs::init_log_forwarding, m)?)?;
    m.add_function(wrap_pyfunction!(logs::run_log_forwarding, m)?)?;
    m.add_function(wrap_pyfunction!(logs::stop_log_forwarding, m)?)?;
    m.add_function(wrap_pyfunction!(warn_secret_on_command_line, m)?)?;
    m.add_function(wrap_pyfunction!(lifecycle_event, m)?)?;
    m.add_function(wrap_pyfunction!(app_not_loaded, m)?)?;
    m.add_function(wrap_pyfunction!(hook_raised, m)?)?;
    m.add_function(wrap_pyfunction!(new_jid, m)?)?;
    m.add_function(wrap_pyfunction!(check_version, m)?)?;
    m.add_class::<periodic::PyPeriodic>()?;
    m.add_class::<limiter::PyLimiter>()?;
    m.add_class::<limiter::PyLease>()?;
    m.add_function(wrap_pyfunction!(periodic::entry, m)?)?;
    m.add_function(wrap_pyfunction!(settings, m)?)?;
    m.add_function(wrap_pyfunction!(producer_span, m)?)?;
    m.add_function(wrap_pyfunction!(payloads_span, m)?)?;
    m.add_function(wrap_pyfunction!(slot_thread_name, m)?)?;
    m.add_function(wrap_pyfunction!(message_attributes, m)?)?;
    m.add_function(wrap_pyfunction!(span_failure, m)?)?;
    m.add_function(wrap_pyfunction!(worker_flags, m)?)?;
    m.add_function(wrap_pyfunction!(command_flags, m)?)?;
    m.add_function(wrap_pyfunction!(command_connection, m)?)?;
    m.add_function(wrap_pyfunction!(settings_from_flags, m)?)?;
    m.add_function(wrap_pyfunction!(client::prepare_job, m)?)?;
    m.add_function(wrap_pyfunction!(client::check_options, m)?)?;
    m.add_function(wrap_pyfunction!(client::prepare_payload, m)?)?;
    m.add_function(wrap_pyfunction!(workflow::batch_callback, m)?)?;
    m.add_function(wrap_pyfunction!(workflow::callback_jids, m)?)?;
    m.add_function(wrap_pyfunction!(workflow::workflow_step, m)?)?;
    m.add_function(wrap_pyfunction!(workflow::workflow_group, m)?)?;
    m.add_function(wrap_pyfunction!(workflow::workflow_shaped, m)?)?;
    m.add_function(wrap_pyfunction!(api::api_calls, m)?)?;
    m.add_function(wrap_pyfunction!(testing::set_testing_mode, m)?)?;
    m.add_function(wrap_pyfunction!(testing::testing_mode, m)?)?;
    m.add_function(wrap_pyfunction!(testing::testing_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(testing::testing_perform_one, m)?)?;
    m.add_function(wrap_pyfunction!(testing::testing_drain, m)?)?;
    m.add_function(wrap_pyfunction!(testing::testing_run, m)?)?;
    m.add_function(wrap_pyfunction!(testing::testing_clear, m)?)?;
    m.add_function(wrap_pyfunction!(testing::testing_result, m)?)?;
    m.add_function(wrap_pyfunction!(testing::testing_status, m)?)?;
    m.add_function(wrap_pyfunction!(testing::testing_unknown_class, m)?)?;
    m.add_function(wrap_pyfunction!(api::admin_commands, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("WORKER_SIGNALS", cogworker::host::WORKER_SIGNALS)?;
    m.add("LIFECYCLE_EVENTS", cogworker::host::LIFECYCLE_EVENTS)?;
    m.add("EXIT_USAGE", cogworker::host::EXIT_USAGE)?;
    m.add("TRACE_CONTEXT_FIELDS", cogworker::host::TRACE_CONTEXT_FIELDS.to_vec())?;
    m.add("TRACER_NAME", cogworker::host::TRACER_NAME)?;
    m.add("WAIT_SLICE", cogworker::host::WAIT_SLICE.as_secs_f64())?;
    m.add("LOGGING_FLAGS", cogworker::host::LOGGING_FLAGS.to_vec())?;
    m.add("TIME_LIMIT_PASSED", cogworker::host::TIME_LIMIT_PASSED)?;
    let threads: std::collections::HashMap<&str, &str> = cogworker::host::HOST_THREADS.into_iter().collect();
    m.add("THREAD_NAMES", threads)?;
    m.add("CHILD_FAILED", cogworker::host::supervisor::CHILD_FAILED)?;
    let push_options: Vec<&str> = cogworker::host::PUSH_OPTIONS.iter().map(|(name, _)| *name).collect();
    m.add("PUSH_OPTIONS", push_options)?;
    Ok(())
}
