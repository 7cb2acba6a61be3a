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
/// `init_logging` chose): one format for the whole process.
#[pyfunction]
fn log_line(level: &str, thread: &str, message: &str, fields: Vec<(String, String)>) {
    cogworker::logging::host_line(level, thread, message, &fields);
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

/// `(long, metavar or None (a switch), repeated, help)` of each flag of
/// `command` (web, metrics or an admin command).
#[pyfunction]
fn command_flags(command: &str) -> Vec<(&'static str, Option<&'static str>, bool, String)> {
    cogworker::host::command_flags(command)
        .into_iter()
        .map(|f| (f.long, f.metavar, f.repeated, f.help))
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
    m.add_class::<web::PyWebServer>()?;
    m.add_class::<web::PyRedisServer>()?;
    m.add_class::<supervisor::PySupervisor>()?;
    m.add_function(wrap_pyfunction!(supervisor::bind_to_parent, m)?)?;
    m.add_function(wrap_pyfunction!(supervisor::child_parent_gone, m)?)?;
    m.add_function(wrap_pyfunction!(supervisor::child_failed, m)?)?;
    m.add_function(wrap_pyfunction!(after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(init_logging, m)?)?;
    m.add_function(wrap_pyfunction!(log_line, m)?)?;
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
    m.add_function(wrap_pyfunction!(worker_flags, m)?)?;
    m.add_function(wrap_pyfunction!(command_flags, m)?)?;
    m.add_function(wrap_pyfunction!(command_connection, m)?)?;
    m.add_function(wrap_pyfunction!(settings_from_flags, m)?)?;
    m.add_function(wrap_pyfunction!(client::prepare_job, m)?)?;
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
    m.add("CHILD_FAILED", cogworker::host::supervisor::CHILD_FAILED)?;
    let push_options: Vec<&str> = cogworker::host::PUSH_OPTIONS.iter().map(|(name, _)| *name).collect();
    m.add("PUSH_OPTIONS", push_options)?;
    Ok(())
}
