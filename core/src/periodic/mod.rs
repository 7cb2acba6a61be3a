//! Periodic (cron) jobs (docs/internals.md, "Periodic jobs"): the entries,
//! as values (schedule, job template, options). The ticker every worker
//! process runs is `periodic_ticker.rs`.

mod pushes;

pub(crate) use pushes::PeriodicPushes;

use crate::error::{Error, Result};
use crate::job::{new_jid, Job, Retry};
use chrono::{TimeZone, Utc};
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use serde_json::{json, Map, Value};

/// One periodic entry: a cron expression (5 fields, or 6 with seconds
/// first), an optional IANA time zone (UTC otherwise), and the job to push
/// on each slot. Its id, [`Periodic::pjid`], is a digest of the whole
/// definition, so the same entry registered by every process of a fleet —
/// in any language — is one entry, and a changed entry is a new one.
#[derive(Clone, Debug)]
pub struct Periodic {
    cron_text: String,
    cron: Cron,
    tz: Option<chrono_tz::Tz>,
    class: String,
    args: Vec<Value>,
    queue: String,
    retry: Option<Retry>,
    until_executed: bool,
}

impl Periodic {
    /// An entry pushing a `class` job with no args to `default` on every
    /// slot of `cron`. The error names the expression and what is wrong.
    pub fn new(cron: &str, class: impl Into<String>) -> Result<Self> {
        let class = class.into();
        if class.trim().is_empty() {
            return Err(Error::config(
                "periodic.class",
                format!("{class:?}"),
                "must be a non-empty string",
            ));
        }
        let parsed = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(cron.trim())
            .map_err(|e| Error::config("periodic.cron", format!("{cron:?}"), e))?;
        // A valid expression no date matches (`0 0 31 2 *`) would tick
        // silently forever.
        if parsed.find_next_occurrence(&Utc::now(), false).is_err() {
            return Err(Error::config(
                "periodic.cron",
                format!("{cron:?}"),
                "never fires: no date matches it",
            ));
        }
        Ok(Periodic {
            cron_text: cron.trim().to_string(),
            cron: parsed,
            tz: None,
            class,
            args: Vec::new(),
            queue: "default".into(),
            retry: None,
            until_executed: false,
        })
    }

    /// The job's arguments.
    pub fn args<I: IntoIterator<Item = Value>>(mut self, args: I) -> Self {
        self.args = args.into_iter().collect();
        self
    }

    /// The queue its jobs go to (default `default`).
    pub fn queue(mut self, queue: &str) -> Result<Self> {
        crate::config::validate_queue_name(queue)
            .map_err(|reason| Error::config("periodic.queue", format!("{queue:?}"), reason))?;
        self.queue = queue.to_string();
        Ok(self)
    }

    /// What a failure of its jobs does.
    pub fn retry(mut self, retry: Retry) -> Self {
        self.retry = Some(retry);
        self
    }

    /// `unique: until_executed`: a slot is skipped while the previous run
    /// of this entry is still queued, running or waiting to retry.
    pub fn until_executed(mut self) -> Self {
        self.until_executed = true;
        self
    }

    /// Evaluate the expression in this IANA time zone (e.g. `Europe/Paris`).
    pub fn time_zone(mut self, name: &str) -> Result<Self> {
        let tz: chrono_tz::Tz = name
            .parse()
            .map_err(|_| Error::config("periodic.tz", format!("{name:?}"), "not an IANA time zone name"))?;
        self.tz = Some(tz);
        Ok(self)
    }

    /// Takes an entry as JSON (how the Python and Ruby layers pass one):
    /// `{"cron", "class", "args"?, "queue"?, "unique"?: "until_executed",
    /// "tz"?, "retry"?}`. Errors name the field.
    pub fn from_json(text: &str) -> Result<Self> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| Error::config("periodic", crate::job::safe_string(text, 200), e))?;
        let Value::Object(map) = value else {
            return Err(Error::config("periodic", text, "must be a JSON object"));
        };
        Self::from_map(&map)
    }

    pub(crate) fn from_map(map: &Map<String, Value>) -> Result<Self> {
        const KNOWN: [&str; 7] = ["cron", "class", "args", "queue", "unique", "tz", "retry"];
        if let Some(unknown) = map.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(Error::config(
                "periodic",
                unknown,
                format!("unknown option (known: {})", KNOWN.join(", ")),
            ));
        }
        let text = |field: &'static str| -> Result<Option<&str>> {
            match map.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(other) => Err(Error::config(field_name(field), other, "must be a string")),
            }
        };
        let cron = text("cron")?.ok_or_else(|| Error::config("periodic.cron", "(missing)", "is required"))?;
        let class = text("class")?.ok_or_else(|| Error::config("periodic.class", "(missing)", "is required"))?;
        let mut entry = Periodic::new(cron, class)?;
        match map.get("args") {
            None | Some(Value::Null) => {}
            Some(Value::Array(args)) => entry.args = args.clone(),
            Some(other) => return Err(Error::config("periodic.args", other, "must be an array")),
        }
        if let Some(queue) = text("queue")? {
            entry = entry.queue(queue)?;
        }
        match text("unique")? {
            None => {}
            Some("until_executed") => entry.until_executed = true,
            Some(other) => {
                return Err(Error::config(
                    "periodic.unique",
                    format!("{other:?}"),
                    "the one mode is \"until_executed\"",
                ))
            }
        }
        if let Some(tz) = text("tz")? {
            entry = entry.time_zone(tz)?;
        }
        match map.get("retry") {
            None | Some(Value::Null) | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => entry.retry = Some(Retry::Discard),
            Some(v) if v.as_u64().is_some_and(|n| n <= u32::MAX as u64) => {
                entry.retry = Some(Retry::Max(v.as_u64().unwrap_or(0) as u32))
            }
            Some(other) => {
                return Err(Error::config(
                    "periodic.retry",
                    other,
                    "must be true, false or a whole number >= 0",
                ))
            }
        }
        Ok(entry)
    }

    /// The entry's stable id: a digest of its whole definition.
    pub fn pjid(&self) -> String {
        use sha1::Digest as _;
        let definition = json!({
            "cron": self.cron_text,
            "tz": self.tz.map(|tz| tz.name().to_string()),
            "class": self.class,
            "args": self.args,
            "queue": self.queue,
            "retry": self.retry.map(|r| format!("{r:?}")),
            "unique": self.until_executed,
        });
        hex::encode(&sha1::Sha1::digest(definition.to_string().as_bytes())[..10])
    }

    /// The cron expression.
    pub fn cron(&self) -> &str {
        &self.cron_text
    }
    /// The handler name.
    pub fn class(&self) -> &str {
        &self.class
    }
    /// The queue its jobs go to.
    pub fn queue_name(&self) -> &str {
        &self.queue
    }
    /// Whether a slot is skipped while the previous run is pending.
    pub fn is_until_executed(&self) -> bool {
        self.until_executed
    }

    /// The entry as it was registered (`cron`, `class`, `args`, `queue`,
    /// and `tz`, `unique`, `retry` when given): what a host lists.
    pub fn describe(&self) -> Value {
        let mut entry = json!({
            "cron": self.cron_text,
            "class": self.class,
            "args": self.args,
            "queue": self.queue,
        });
        if let Some(tz) = self.tz {
            entry["tz"] = Value::String(tz.name().to_string());
        }
        if self.until_executed {
            entry["unique"] = Value::String("until_executed".into());
        }
        match self.retry {
            Some(Retry::Discard) => entry["retry"] = Value::Bool(false),
            Some(Retry::Max(n)) => entry["retry"] = Value::from(n),
            None => {}
        }
        entry
    }

    /// How the entry is shown in the process info and the ops API.
    pub(crate) fn summary(&self) -> Value {
        json!({
            "pjid": self.pjid(),
            "cron": self.cron_text,
            "tz": self.tz.map(|tz| tz.name().to_string()),
            "class": self.class,
            "args": self.args,
            "queue": self.queue,
            "until_executed": self.until_executed,
        })
    }

    /// The job pushed for `slot` (epoch seconds), created and enqueued
    /// at `now` (as the layout writes a job's time: `Keys::job_time`).
    pub(crate) fn job_for(&self, pjid: &str, slot: i64, now: &Value) -> Job {
        let mut job = Job::new(self.class.clone())
            .args(self.args.iter().cloned())
            .queue(self.queue.clone())
            .jid(new_jid())
            .field("created_at", now.clone())
            .field("enqueued_at", now.clone())
            .field("periodic_pjid", Value::String(pjid.to_string()))
            .field("periodic_slot", Value::from(slot));
        if let Some(retry) = self.retry {
            job = job.retry(retry);
        }
        if self.until_executed {
            job = job.field("periodic_until_executed", Value::Bool(true));
        }
        job
    }

    /// The latest slot at or before `at` (epoch seconds).
    pub(crate) fn latest_slot(&self, at: i64) -> Option<i64> {
        self.previous(at, true)
    }

    /// The slots in `(after, at]`, oldest first: at most `max`, the most
    /// recent ones. The flag says whether older ones were left out.
    pub(crate) fn slots_between(&self, after: i64, at: i64, max: usize) -> (Vec<i64>, bool) {
        let mut slots = Vec::new();
        let mut cursor = self.previous(at, true);
        while let Some(slot) = cursor {
            if slot <= after {
                break;
            }
            if slots.len() == max {
                slots.reverse();
                return (slots, true);
            }
            slots.push(slot);
            cursor = self.previous(slot, false);
        }
        slots.reverse();
        (slots, false)
    }

    fn previous(&self, at: i64, inclusive: bool) -> Option<i64> {
        match self.tz {
            Some(tz) => {
                let time = tz.timestamp_opt(at, 0).single()?;
                self.cron
                    .find_previous_occurrence(&time, inclusive)
                    .ok()
                    .map(|t| t.timestamp())
            }
            None => {
                let time = Utc.timestamp_opt(at, 0).single()?;
                self.cron
                    .find_previous_occurrence(&time, inclusive)
                    .ok()
                    .map(|t| t.timestamp())
            }
        }
    }
}

fn field_name(field: &'static str) -> &'static str {
    match field {
        "cron" => "periodic.cron",
        "class" => "periodic.class",
        "queue" => "periodic.queue",
        "unique" => "periodic.unique",
        "tz" => "periodic.tz",
        _ => "periodic",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_and_six_field_expressions_give_slots() {
        let minutely = Periodic::new("* * * * *", "A").unwrap();
        assert_eq!(minutely.latest_slot(125), Some(120));
        let started = std::time::Instant::now();
        let err = Periodic::new("0 0 31 2 *", "A").unwrap_err();
        assert_eq!(err.field(), Some("periodic.cron"));
        assert!(err.to_string().contains("never fires"), "{err}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
        let secondly = Periodic::new("*/2 * * * * *", "A").unwrap();
        assert_eq!(secondly.latest_slot(125), Some(124));
        assert_eq!(secondly.slots_between(118, 125, 100), (vec![120, 122, 124], false));
        assert_eq!(secondly.slots_between(100, 125, 2), (vec![122, 124], true));
    }

    #[test]
    fn time_zones_shift_the_slots() {
        let utc = Periodic::new("0 9 * * *", "A").unwrap();
        let paris = Periodic::new("0 9 * * *", "A")
            .unwrap()
            .time_zone("Europe/Paris")
            .unwrap();
        // 2026-01-15 12:00 UTC: 09:00 UTC that day; 09:00 Paris = 08:00 UTC.
        let noon = 1_768_478_400;
        assert_eq!(noon - utc.latest_slot(noon).unwrap(), 3 * 3600);
        assert_eq!(noon - paris.latest_slot(noon).unwrap(), 4 * 3600);
    }

    #[test]
    fn bad_definitions_name_the_field_and_value() {
        for (json, field) in [
            (r#"{"cron": "61 * * * *", "class": "A"}"#, "periodic.cron"),
            (r#"{"cron": "* * *", "class": "A"}"#, "periodic.cron"),
            (r#"{"class": "A"}"#, "periodic.cron"),
            (r#"{"cron": "* * * * *"}"#, "periodic.class"),
            (
                r#"{"cron": "* * * * *", "class": "A", "tz": "Mars/Base"}"#,
                "periodic.tz",
            ),
            (
                r#"{"cron": "* * * * *", "class": "A", "unique": "yes"}"#,
                "periodic.unique",
            ),
            (r#"{"cron": "* * * * *", "class": "A", "queue": ""}"#, "periodic.queue"),
            (r#"{"cron": "* * * * *", "class": "A", "args": 3}"#, "periodic.args"),
            (r#"{"cron": "* * * * *", "class": "A", "every": 3}"#, "every"),
        ] {
            let err = Periodic::from_json(json).unwrap_err().to_string();
            assert!(err.contains(field), "{json}: {err}");
        }
    }

    #[test]
    fn pjid_is_stable_and_follows_the_definition() {
        let a = Periodic::from_json(r#"{"cron": "* * * * *", "class": "A", "args": [1]}"#).unwrap();
        let b = Periodic::new("* * * * *", "A").unwrap().args([json!(1)]);
        assert_eq!(a.pjid(), b.pjid());
        assert_eq!(a.pjid().len(), 20);
        assert_ne!(a.pjid(), b.clone().until_executed().pjid());
        assert_ne!(a.pjid(), b.queue("other").unwrap().pjid());
    }
}
