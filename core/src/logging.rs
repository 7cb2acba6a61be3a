//! Log output: one line per entry with time, level, pid and the process
//! identity, written unbuffered to stderr so nothing is lost on exit; or
//! one JSON object per line. The host languages' own log records (Python
//! `logging`, Ruby `Logger`) are written through [`host_line`] in the same
//! format, so a process prints one format, not two.

use crate::printable::{shown, shown_lines};
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::RwLock;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

static IDENTITY: RwLock<String> = RwLock::new(String::new());

/// The job a Rust handler runs: its own log lines carry `jid=` and
/// `class=` (as a Python or Ruby handler's do), set for the handler's task
/// (and a blocking handler's thread) by the registry.
#[derive(Clone, Debug)]
pub(crate) struct RunningJob {
    pub jid: String,
    pub class: String,
}

tokio::task_local! {
    pub(crate) static RUNNING_JOB: RunningJob;
}

thread_local! {
    static BLOCKING_JOB: std::cell::RefCell<Option<RunningJob>> = const { std::cell::RefCell::new(None) };
    /// The name of a thread the host started, as the host calls it (see
    /// [`name_host_thread`]).
    static HOST_THREAD_NAME: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Names the calling thread on the engine's lines written from it: Rust
/// knows no name for a thread a Python or Ruby program started, whose
/// lines showed `[-]`. The bindings call it where a host thread enters a
/// long call (a slot's loop); the process's main thread is `main`
/// without it.
pub fn name_host_thread(name: &str) {
    HOST_THREAD_NAME.with(|current| *current.borrow_mut() = Some(name.to_string()));
}

/// What every line calls the process's main thread, whatever its host
/// calls it (Python's `MainThread`).
pub const MAIN_THREAD: &str = "main";

/// The name a line shows for a thread Rust knows no name for: the host's
/// ([`name_host_thread`]), `main` for the process's main thread, else `-`.
fn unnamed_thread() -> String {
    if let Some(name) = HOST_THREAD_NAME.with(|current| current.borrow().clone()) {
        return name;
    }
    if is_main_thread() {
        MAIN_THREAD.to_string()
    } else {
        "-".to_string()
    }
}

/// Is this the process's main thread (its thread id is the process id)?
#[cfg(target_os = "linux")]
fn is_main_thread() -> bool {
    // SAFETY: gettid has no preconditions and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    tid == i64::from(std::process::id())
}

#[cfg(not(target_os = "linux"))]
fn is_main_thread() -> bool {
    false
}

/// Runs `blocking` (a blocking handler, on its pool thread) with `job` as
/// the running job of that thread's log lines.
pub(crate) fn with_blocking_job<R>(job: Option<RunningJob>, blocking: impl FnOnce() -> R) -> R {
    BLOCKING_JOB.with(|current| *current.borrow_mut() = job);
    let result = blocking();
    BLOCKING_JOB.with(|current| *current.borrow_mut() = None);
    result
}

/// `jid` and `class` of the running job (if any) added to a line's fields
/// that do not name a job already.
pub(crate) fn add_running_job(extra: &mut Vec<(String, String)>) {
    if let Some(job) = running_job() {
        if !extra.iter().any(|(name, _)| name == "jid") {
            extra.push(("jid".into(), job.jid));
            extra.push(("class".into(), job.class));
        }
    }
}

pub(crate) fn running_job() -> Option<RunningJob> {
    RUNNING_JOB
        .try_with(Clone::clone)
        .ok()
        .or_else(|| BLOCKING_JOB.with(|current| current.borrow().clone()))
}
static JSON: AtomicBool = AtomicBool::new(false);
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Log lines that could not be written (the reader of stderr went away:
/// `cogworker worker | head`) and were dropped.
pub fn dropped_lines() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Writes `line` to stderr in one call; a failed write drops the line and
/// counts it. Logging must never take the engine down: a panic here (what
/// `eprintln!` does on a closed pipe) would stop the thread that logged,
/// mid-job, and leave a worker TERM cannot stop.
fn write_line(line: &[u8]) {
    if std::io::stderr().lock().write_all(line).is_err() {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// The subscriber's writer: each entry through [`write_line`].
struct Stderr;

impl std::io::Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        write_line(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) fn set_identity(identity: &str) {
    *IDENTITY.write().unwrap_or_else(|p| p.into_inner()) = identity.to_string();
}

/// Installs the global log subscriber (once; later calls do nothing).
/// Level from `COGWORKER_LOG` (e.g. `debug`), default `info`.
pub fn init(json: bool) {
    let installed = tracing_subscriber::fmt()
        .with_env_filter(env_filter())
        .with_writer(|| Stderr)
        // Its own report of a failed write is an `eprintln!`, which panics
        // on the same closed pipe.
        .log_internal_errors(false)
        .event_format(LineFormat { json })
        .try_init();
    if installed.is_ok() {
        // The host's lines follow the format the first call chose.
        JSON.store(json, Ordering::Relaxed);
    }
}

/// Which lines are logged: `COGWORKER_LOG` (an `EnvFilter`), else `info`.
pub(crate) fn env_filter() -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::try_from_env("COGWORKER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
        // The job and push spans (see `crate::trace`) are for tracing
        // layers; these lines show no spans, and a span per job costs.
        .add_directive("cogworker::trace=off".parse().expect("a valid directive"))
}

struct LineFormat {
    json: bool,
}

/// An event's message and its other fields, as text.
#[derive(Default)]
pub(crate) struct Fields {
    pub message: String,
    pub extra: Vec<(String, String)>,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            self.extra.push((field.name().to_string(), format!("{value:?}")));
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.extra.push((field.name().to_string(), value.to_string()));
        }
    }
}

impl<S, N> FormatEvent<S, N> for LineFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> std::fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        add_running_job(&mut fields.extra);
        // Rust's name for the thread, borrowed (a line per job is written).
        let thread = std::thread::current();
        let unnamed;
        let name = match thread.name() {
            Some(name) => name,
            None => {
                unnamed = unnamed_thread();
                &unnamed
            }
        };
        let line = render(
            self.json,
            event.metadata().level().as_str(),
            name,
            &fields.message,
            &fields.extra,
        );
        writer.write_str(&line)
    }
}

/// One entry as written: text (`time LEVEL pid=.. identity [thread]
/// message k=v...`, a backtrace field on lines of its own) or a JSON object;
/// with its newline.
fn render(json: bool, level: &str, thread: &str, message: &str, extra: &[(String, String)]) -> String {
    let time = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    let pid = std::process::id();
    // Read in place: a line per job is written, no copy each time.
    let identity = IDENTITY.read().unwrap_or_else(|p| p.into_inner());
    let identity = identity.as_str();
    if json {
        let mut object = serde_json::json!({
            "time": time, "level": level, "pid": pid, "identity": identity,
            "thread": thread, "message": message,
        });
        for (k, v) in extra {
            object[k] = serde_json::Value::String(v.clone());
        }
        return format!("{object}\n");
    }
    // Every text that came from a job, a pusher or the host is escaped: a
    // newline in a jid must not start a forged entry, an ESC must not
    // reach the terminal. A backtrace keeps its lines, each indented, so
    // only an entry starts at the line's beginning.
    let mut line = format!(
        "{time} {level:<5} pid={pid} {identity} [{}] {}",
        shown(thread),
        shown(message)
    );
    let mut trailing = String::new();
    for (k, v) in extra {
        if k == "backtrace" || k == "exception" {
            for backtrace_line in shown_lines(v).lines() {
                trailing.push_str("\n  ");
                trailing.push_str(backtrace_line);
            }
        } else {
            let _ = write!(line, " {k}={}", shown(v));
        }
    }
    line.push_str(&trailing);
    line.push('\n');
    line
}

/// Whether lines are written as JSON (`init(true)`).
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// Writes a log entry of the host language (Python `logging`, Ruby
/// `Logger`) in the core's format (as [`init`] chose it: text or JSON):
/// `level` is the host's name for it (`WARNING` is written `WARN`),
/// `thread` the host thread's name, `fields` extra pairs (`logger`, `jid`,
/// `class`, `exception`...).
pub fn host_line(level: &str, thread: &str, message: &str, fields: &[(String, String)]) {
    let level = match level.to_ascii_uppercase().as_str() {
        "WARNING" | "WARN" => "WARN",
        "CRITICAL" | "FATAL" | "ERROR" => "ERROR",
        "DEBUG" => "DEBUG",
        "TRACE" => "TRACE",
        _ => "INFO",
    };
    write_line(render(JSON.load(Ordering::Relaxed), level, thread, message, fields).as_bytes());
}

/// A host's own log record (Python `logging`, Ruby `Logger`) written as
/// [`host_line`] writes it, its fields named here for both hosts: `logger`
/// the host logger's name, `job` the running job's jid and class (the
/// host knows it: an async handler shares its thread with others), and
/// `exception` the host's traceback text. `thread` is the host's name for
/// the writing thread; the main thread is `main` in every host, a thread
/// with no name `-`.
pub fn host_record(
    level: &str,
    thread: Option<&str>,
    is_main: bool,
    message: &str,
    logger: &str,
    job: Option<(&str, &str)>,
    exception: Option<&str>,
) {
    let mut fields = vec![("logger".to_string(), logger.to_string())];
    if let Some((jid, class)) = job {
        fields.push(("jid".into(), jid.into()));
        fields.push(("class".into(), class.into()));
    }
    if let Some(exception) = exception {
        fields.push(("exception".into(), exception.into()));
    }
    let thread = if is_main { MAIN_THREAD } else { thread.unwrap_or("-") };
    host_line(level, thread, message, &fields);
}

#[cfg(test)]
mod tests {

    #[tokio::test]
    async fn a_line_written_inside_a_handler_names_its_job() {
        let running = RunningJob {
            jid: "abc".into(),
            class: "Resize".into(),
        };
        let extra = RUNNING_JOB
            .scope(running.clone(), async {
                let mut extra = Vec::new();
                add_running_job(&mut extra);
                extra
            })
            .await;
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(extra, [pair("jid", "abc"), pair("class", "Resize")]);
        let text = render(false, "INFO", "t", "resizing", &extra);
        assert!(text.contains("resizing jid=abc class=Resize"), "{text}");
        let mut named = vec![pair("jid", "other")];
        with_blocking_job(Some(running), || add_running_job(&mut named));
        assert_eq!(named, [pair("jid", "other")], "a line naming a job keeps its own");
        let mut outside = Vec::new();
        add_running_job(&mut outside);
        assert!(outside.is_empty());
    }

    use super::*;

    #[test]
    fn text_and_json_lines_carry_the_same_fields() {
        let extra = vec![
            ("jid".to_string(), "abc".to_string()),
            ("exception".to_string(), "Traceback\n  boom".to_string()),
        ];
        let text = render(false, "WARN", "slot-1", "it broke", &extra);
        assert!(
            text.contains(" WARN  pid=") && text.contains("[slot-1] it broke jid=abc\n  Traceback\n    boom\n"),
            "{text}"
        );
        let json: serde_json::Value =
            serde_json::from_str(render(true, "WARN", "slot-1", "it broke", &extra).trim()).unwrap();
        assert_eq!(
            (json["level"].as_str(), json["jid"].as_str(), json["thread"].as_str()),
            (Some("WARN"), Some("abc"), Some("slot-1"))
        );
        assert_eq!(json["exception"], "Traceback\n  boom");
    }

    #[test]
    fn a_jid_class_or_message_cannot_forge_a_line_or_send_escapes() {
        let forged = "x\n2026-01-01T00:00:00.000Z INFO  pid=1 w [p] done class=Fake\u{1b}[2J\u{202e}";
        let extra = vec![
            ("jid".to_string(), forged.to_string()),
            ("exception".to_string(), format!("Traceback\n  {forged}")),
        ];
        let text = render(false, "INFO", "slot\n1", forged, &extra);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.iter().skip(1).all(|line| line.starts_with("  ")),
            "only the entry starts a line; its backtrace is indented: {text}"
        );
        assert!(lines[0].contains("[slot\\u{a}1] x\\u{a}2026-01-01"), "{text}");
        assert!(lines[0].contains("Fake\\u{1b}[2J\\u{202e} jid=x\\u{a}2026"), "{text}");
        assert_eq!(lines[1], "  Traceback", "{text}");
        assert_eq!(
            lines[2..],
            [
                "    x",
                "  2026-01-01T00:00:00.000Z INFO  pid=1 w [p] done class=Fake\\u{1b}[2J\\u{202e}"
            ]
        );
        assert!(!text.contains('\u{1b}') && !text.contains('\u{202e}'), "{text}");
    }
}
