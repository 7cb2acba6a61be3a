//! Log output: one line per entry with time, level, pid and the process
//! identity, written unbuffered to stderr so nothing is lost on exit; or
//! one JSON object per line.

use std::fmt::Write as _;
use std::sync::RwLock;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

static IDENTITY: RwLock<String> = RwLock::new(String::new());

pub(crate) fn set_identity(identity: &str) {
    *IDENTITY.write().unwrap_or_else(|p| p.into_inner()) = identity.to_string();
}

/// Installs the global log subscriber (once; later calls do nothing).
/// Level from `COGWORKER_LOG` (e.g. `debug`), default `info`.
pub fn init(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("COGWORKER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .event_format(LineFormat { json })
        .try_init();
}

struct LineFormat {
    json: bool,
}

#[derive(Default)]
struct Fields {
    message: String,
    extra: Vec<(String, String)>,
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
        let time = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let level = event.metadata().level().as_str();
        let pid = std::process::id();
        let identity = IDENTITY.read().map(|s| s.clone()).unwrap_or_default();
        let thread = std::thread::current();
        let thread = thread.name().unwrap_or("-");
        if self.json {
            let mut object = serde_json::json!({
                "time": time, "level": level, "pid": pid, "identity": identity,
                "thread": thread, "message": fields.message,
            });
            for (k, v) in fields.extra {
                object[k] = serde_json::Value::String(v);
            }
            writeln!(writer, "{object}")
        } else {
            write!(
                writer,
                "{time} {level:<5} pid={pid} {identity} [{thread}] {}",
                fields.message
            )?;
            for (k, v) in fields.extra {
                write!(writer, " {k}={v}")?;
            }
            writeln!(writer)
        }
    }
}
