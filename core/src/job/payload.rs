//! A payload read from Redis or given as JSON: parsed (what cannot be run
//! says why), completed with what a stored job may lack, or wrapped
//! whole when no job can be made of it.

use super::{
    check_nesting, float, new_jid, now, numbers, safe_string, type_name, Job, Retry, ERROR_MESSAGE_LIMIT,
    RAW_PAYLOAD_LIMIT, UNPARSEABLE_CLASS,
};
use crate::error::{Error, Result};
use serde_json::{Map, Value};

impl Job {
    /// An empty stand-in, for moving a job out of a value being dropped.
    pub(crate) fn placeholder() -> Self {
        Job::of(Map::new())
    }

    /// Takes a JSON object as a job to push; see [`Job::validate`].
    pub fn from_value(value: Value) -> Result<Self> {
        match value {
            Value::Object(fields) => {
                let mut job = Job::of(fields);
                job.validate()?;
                Ok(job)
            }
            other => Err(Error::invalid_job(
                "job",
                format!("must be a JSON object, got {}", type_name(&other)),
            )),
        }
    }

    /// Parses a fetched payload. `Err` carries why it cannot be run; the
    /// caller buries it (see [`Job::unparseable`]).
    pub fn parse(raw: &[u8]) -> std::result::Result<Self, String> {
        let fields = match serde_json::from_slice::<Fields>(raw) {
            Ok(Fields(fields)) => fields,
            // Not an object: read again as any JSON, to say what it is.
            Err(_) => match serde_json::from_slice(raw).map_err(|e| format!("not valid JSON: {e}"))? {
                Value::Object(fields) => fields,
                value => return Err(format!("not a JSON object but {}", type_name(&value))),
            },
        };
        match fields.get("class") {
            Some(Value::String(c)) if !c.is_empty() => {}
            Some(_) => return Err("`class` is not a non-empty string".into()),
            None => return Err("no `class` field".into()),
        }
        match fields.get("args") {
            Some(Value::Array(args)) => check_nesting(args).map_err(|(field, reason)| format!("`{field}` {reason}"))?,
            Some(args) => return Err(format!("`args` is {}, not an array", type_name(args))),
            None => {}
        }
        numbers::check_on_delivery(&fields)?;
        // Where a retry or a give-back puts the job: a group no fetch can
        // read it back from would strand it.
        match fields.get("group") {
            Some(Value::String(group)) if crate::job::valid_group(group) => {}
            Some(group) => return Err(format!("`group` is {group}, but {}", crate::job::GROUP_RULE)),
            None => {}
        }
        match fields.get("group_rate_kind") {
            Some(Value::String(kind)) if crate::job::RATE_KINDS.contains(&kind.as_str()) => {}
            Some(kind) => {
                return Err(format!(
                    "`group_rate_kind` is {kind}, but {}",
                    crate::job::RATE_KIND_RULE
                ))
            }
            None => {}
        }
        Ok(Job::of(fields))
    }

    /// Fills what a job taken from Redis may lack, so every later path sees
    /// a complete job: `queue` (`default`), `retry` (`true`), `created_at`
    /// (`now`) and `jid` (a new one: two byte-identical payloads without a
    /// jid become two jobs, never one sorted-set member). Fields present
    /// are left as they are.
    pub(crate) fn normalize(&mut self, now: f64) {
        let missing = |fields: &Map<String, Value>, key: &str| !fields.contains_key(key);
        if missing(&self.fields, "queue") {
            self.set("queue", Value::String("default".into()));
        }
        if missing(&self.fields, "retry") {
            self.set("retry", Value::Bool(true));
        }
        if missing(&self.fields, "created_at") {
            self.set("created_at", float(now));
        }
        if self.jid_str().is_empty() {
            self.set("jid", Value::String(new_jid()));
        }
    }

    /// The wrapper an unparseable payload is buried as: a regular job (so
    /// every tool can list it) keeping the original bytes.
    pub fn unparseable(raw: &[u8], queue: &str, reason: &str) -> Self {
        let now = now();
        let kept = &raw[..raw.len().min(RAW_PAYLOAD_LIMIT)];
        let mut job = Job::new(UNPARSEABLE_CLASS)
            .queue(queue)
            .retry(Retry::Discard)
            .jid(new_jid())
            .field("retry_count", Value::from(0))
            .field("enqueued_at", float(now))
            .field("failed_at", float(now))
            .field("error_class", Value::String("cogworker::UnparseablePayload".into()))
            .field("error_message", Value::String(safe_string(reason, ERROR_MESSAGE_LIMIT)))
            .field("raw_payload", Value::String(String::from_utf8_lossy(kept).into_owned()));
        if std::str::from_utf8(kept).is_err() {
            // Lossy text alone would drop the invalid bytes: keep them exactly.
            use base64::Engine as _;
            let encoded = base64::engine::general_purpose::STANDARD.encode(kept);
            job.set("raw_payload_base64", Value::String(encoded));
        }
        job
    }
}

/// The fields of a payload that is a JSON object, read into a map made
/// big enough for a job's usual fields at once: grown field by field (as
/// a `Value` is read) a job of 8 fields was moved three times on its
/// way, a fifth of a worker's parse of a no-op job.
struct Fields(Map<String, Value>);

/// Room for the fields of most jobs (a job carries 7 to 12).
const USUAL_FIELDS: usize = 16;

impl<'de> serde::Deserialize<'de> for Fields {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> serde::de::Visitor<'de> for ObjectVisitor {
            type Value = Fields;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> std::result::Result<Fields, A::Error> {
                let mut fields = Map::with_capacity(USUAL_FIELDS.max(access.size_hint().unwrap_or(0)));
                // A key given twice keeps its last value, as a `Value` does.
                while let Some((key, value)) = access.next_entry::<String, Value>()? {
                    fields.insert(key, value);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}
