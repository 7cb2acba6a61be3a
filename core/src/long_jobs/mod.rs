//! Long jobs (docs/long-jobs.md): what a running job reports of itself,
//! and whether it should stop.
//!
//! - **Progress** (`progress(42, "rows 4,200 / 10,000", data)`): kept at
//!   `NS:progress:<jid>` for as long as the job's result (`result_ttl`),
//!   else a day, and published on the channel of the same name, so
//!   [`crate::Api::progress`] reads it and a watcher sees it without
//!   polling.
//! - **Checkpoint** (`checkpoint(cursor)`): the job's `cursor` field is
//!   set in its in-progress record, so whatever runs it again (recovery
//!   after `kill -9`, shutdown's give-back, a retry, a time limit, an
//!   interruption) hands the handler that cursor.
//! - **Stopping**: true once the worker shuts down, the job was cancelled
//!   or its time limit is near; a handler stops between items and either
//!   ends or [`Running::interrupt`]s (back on its queue with its cursor,
//!   not a failure).
//!
//! Both writes are coalesced (`reports.rs`, written by the worker's
//! `report_writer.rs`): a handler may call them in a tight loop; Redis
//! sees each job's latest at most every [`WRITE_INTERVAL`]. A job that
//! calls neither costs nothing.

mod iteration;
mod reports;
mod running;

pub use crate::job::CURSOR_MAX;
pub use iteration::Iteration;
pub(crate) use reports::{Pending, Reports};
pub use running::Running;
pub(crate) use running::{scope, with_blocking, Control};

use crate::error::{Error, Result};
use serde_json::{Map, Value};

/// Longest progress message, in characters.
pub const PROGRESS_MESSAGE_MAX: usize = 1_000;
/// Largest progress `data`, in bytes of JSON.
pub const PROGRESS_DATA_MAX: usize = 16 * 1024;
/// How long the progress of a job without `result_ttl` is kept after its
/// last report, in seconds.
pub const PROGRESS_TTL_SECS: u64 = 86_400;
/// At most this often one job's progress or checkpoint is written.
pub const WRITE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);
/// Near its time limit: a job is `stopping` once less than this remains
/// (or a tenth of the limit, if that is shorter).
pub(crate) const NEAR_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// A progress report as stored and published: `{jid, percent, message,
/// data, at}` (`percent` 0 to 100, or null when the job knows no total).
/// Errors name the argument.
pub fn progress_record(jid: &str, percent: Option<f64>, message: Option<&str>, data: Option<Value>) -> Result<String> {
    if let Some(percent) = percent {
        if !percent.is_finite() || !(0.0..=100.0).contains(&percent) {
            return Err(Error::invalid_argument(
                "percent",
                percent,
                "must be a number from 0 to 100",
            ));
        }
    }
    if let Some(message) = message {
        let length = message.chars().count();
        if length > PROGRESS_MESSAGE_MAX {
            return Err(Error::invalid_argument(
                "message",
                format!("{length} characters"),
                format!("must be at most {PROGRESS_MESSAGE_MAX} characters"),
            ));
        }
    }
    if let Some(data) = &data {
        if let Some(reason) = crate::job::json_rule_broken(data, PROGRESS_DATA_MAX) {
            return Err(Error::invalid_argument("data", "(JSON)", reason));
        }
    }
    let mut record = Map::new();
    record.insert("jid".into(), Value::String(jid.to_string()));
    record.insert("percent".into(), percent.map_or(Value::Null, crate::job::float));
    record.insert(
        "message".into(),
        message.map_or(Value::Null, |m| Value::String(m.to_string())),
    );
    record.insert("data".into(), data.unwrap_or(Value::Null));
    record.insert("at".into(), crate::job::float(crate::job::now()));
    Ok(Value::Object(record).to_string())
}
