//! The job: one JSON object (docs/internals.md). Unknown fields are kept as they are on
//! every path, so newer clients and other languages can add their own.

use crate::error::{Error, Result};
use serde_json::{Map, Value};

mod numbers;
pub use numbers::{LATEST_EPOCH_SECS, LONGEST_SECS};

/// The priority level of a job that names none (see [`crate::priority`]).
pub const DEFAULT_PRIORITY: u8 = 5;
/// The highest priority level (taken first); 0 is the lowest.
pub const HIGHEST_PRIORITY: u8 = 9;

/// Longest `error_message` stored, in characters.
pub const ERROR_MESSAGE_LIMIT: usize = 10_000;
/// Most `error_backtrace` lines stored.
pub const BACKTRACE_LIMIT: usize = 200;
/// Most bytes of an unparseable payload kept under `raw_payload`.
pub const RAW_PAYLOAD_LIMIT: usize = 100_000;
/// `class` of the wrapper an unparseable payload is buried as.
pub const UNPARSEABLE_CLASS: &str = "(unparseable)";
/// `retry: true` means this many retries.
pub const DEFAULT_MAX_RETRIES: u32 = 25;
/// Deepest nesting of lists and maps in one argument or result (`[[1]]`
/// nests 2 deep). Ruby's `JSON.generate` refuses past 100 by default; the
/// whole job (object, `args`, argument) stays within serde_json's parse
/// limit of 128, so what a push accepts every worker can read.
pub const MAX_NESTING: usize = 100;
/// Longest `jid`, in characters.
pub const JID_MAX_LEN: usize = 64;
/// Longest `class` a push takes, in characters: it is a handler's name,
/// and a dashboard link carries it.
pub const CLASS_MAX_LEN: usize = 256;

/// A job payload. Build one with [`Job::new`] and the builder methods, or
/// take one apart with the accessors.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    fields: Map<String, Value>,
}

/// What happens when a job fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// `retry: false`: a failure discards the job.
    Discard,
    /// Retry up to this many times, then bury in `dead` (`retry: 0` buries at once).
    Max(u32),
}

impl Job {
    /// A job for handler `class` with no args, on queue `default`, retried
    /// up to 25 times.
    pub fn new(class: impl Into<String>) -> Self {
        let mut fields = Map::new();
        fields.insert("class".into(), Value::String(class.into()));
        fields.insert("args".into(), Value::Array(Vec::new()));
        fields.insert("queue".into(), Value::String("default".into()));
        fields.insert("retry".into(), Value::Bool(true));
        Job { fields }
    }

    /// The handler's arguments.
    pub fn args<I: IntoIterator<Item = Value>>(mut self, args: I) -> Self {
        self.fields
            .insert("args".into(), Value::Array(args.into_iter().collect()));
        self
    }
    /// The queue to push to.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.fields.insert("queue".into(), Value::String(queue.into()));
        self
    }
    /// What a failure does.
    pub fn retry(mut self, retry: Retry) -> Self {
        let value = match retry {
            Retry::Discard => Value::Bool(false),
            Retry::Max(n) => Value::from(n),
        };
        self.fields.insert("retry".into(), value);
        self
    }
    /// Run no earlier than `epoch_seconds`.
    pub fn at(mut self, epoch_seconds: f64) -> Self {
        self.fields.insert("at".into(), float(epoch_seconds));
        self
    }
    /// Run `seconds` from now.
    pub fn delay(self, seconds: f64) -> Self {
        self.at(now() + seconds)
    }
    /// Its id (a push gives one when there is none).
    pub fn jid(mut self, jid: impl Into<String>) -> Self {
        self.fields.insert("jid".into(), Value::String(jid.into()));
        self
    }
    /// Unique for `seconds`: while a job with the same class, queue and
    /// args holds the lock (until it succeeds or dies, at most `seconds`
    /// after it was due), pushing another returns no jid.
    pub fn unique_for(mut self, seconds: f64) -> Self {
        self.fields.insert("unique_for".into(), float(seconds));
        self
    }
    /// Keep this job's outcome (status, return value or error) for
    /// `seconds` after it settles, for [`crate::Api::result`] and
    /// [`crate::Api::status`]. A job without it pays nothing for results.
    pub fn result_ttl(mut self, seconds: f64) -> Self {
        self.fields.insert("result_ttl".into(), float(seconds));
        self
    }
    /// Its priority within its queue: 0 (last) to 9 (first); a job
    /// without one is at 5. Strict: a worker takes every job of a higher
    /// level of a queue before one of a lower level (see
    /// [`crate::priority`]).
    pub fn priority(mut self, level: u8) -> Self {
        self.fields.insert("priority".into(), Value::from(level));
        self
    }
    /// Dropped, never run, if it has not started `seconds` after it is
    /// pushed: counted as `expired`, logged, and kept in `dead` only with
    /// [`Job::keep_expired`].
    pub fn expires_in(mut self, seconds: f64) -> Self {
        self.fields.insert("expires_in".into(), float(seconds));
        self
    }
    /// Its time limit: a handler still running `seconds` after it began is
    /// stopped (see [`crate::time_limit`]) and the job fails as
    /// `cogworker::Timeout`, retried by its policy.
    pub fn timeout(mut self, seconds: f64) -> Self {
        self.fields.insert("timeout".into(), float(seconds));
        self
    }
    /// Dropped, never run, if it has not started by `epoch_seconds` (see
    /// [`Job::expires_in`]).
    pub fn expires_at(mut self, epoch_seconds: f64) -> Self {
        self.fields.insert("expires_at".into(), float(epoch_seconds));
        self
    }
    /// Once expired, filed in `dead` (as `cogworker::Expired`) instead of
    /// dropped.
    pub fn keep_expired(mut self) -> Self {
        self.fields.insert("keep_expired".into(), Value::Bool(true));
        self
    }
    /// Runs only within the rate limiters `names` (see [`crate::Limit`]):
    /// each is taken before a slot runs the job; over one, the job is
    /// rescheduled (not failed, not a retry) until it gets its turn, at most
    /// `over_limit_max` times.
    pub fn limits<S: Into<String>, I: IntoIterator<Item = S>>(mut self, names: I) -> Self {
        let names = names.into_iter().map(|n| Value::String(n.into())).collect();
        self.fields.insert("limits".into(), Value::Array(names));
        self
    }
    /// Any other field, kept as given.
    pub fn field(mut self, key: impl Into<String>, value: Value) -> Self {
        self.fields.insert(key.into(), value);
        self
    }

    /// An empty stand-in, for moving a job out of a value being dropped.
    pub(crate) fn placeholder() -> Self {
        Job { fields: Map::new() }
    }

    /// Takes a JSON object as a job to push; see [`Job::validate`].
    pub fn from_value(value: Value) -> Result<Self> {
        match value {
            Value::Object(fields) => {
                let mut job = Job { fields };
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
        let value: Value = serde_json::from_slice(raw).map_err(|e| format!("not valid JSON: {e}"))?;
        let Value::Object(fields) = value else {
            return Err(format!("not a JSON object but {}", type_name(&value)));
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
        Ok(Job { fields })
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

    /// Checks every known field a pusher may set; the error names the field.
    pub fn validate(&mut self) -> Result<()> {
        let bad = |field: &str, value: &Value, reason: &str| Error::invalid_value(field, value, reason);
        match self.fields.get("class") {
            Some(Value::String(c)) if !c.trim().is_empty() && c.chars().count() <= CLASS_MAX_LEN => {}
            Some(Value::String(c)) if !c.trim().is_empty() => {
                return Err(Error::invalid_job(
                    "class",
                    format!("must be at most {CLASS_MAX_LEN} characters, not {}", c.chars().count()),
                ))
            }
            Some(v) => return Err(bad("class", v, "must be a non-empty string")),
            None => return Err(Error::invalid_job("class", "is required")),
        }
        match self.fields.get("args") {
            None => {
                self.fields.insert("args".into(), Value::Array(Vec::new()));
            }
            Some(Value::Array(args)) => {
                check_nesting(args).map_err(|(field, reason)| Error::invalid_job(field, reason))?
            }
            Some(v) => return Err(bad("args", v, "must be an array")),
        }
        match self.fields.get("queue") {
            None => {
                self.fields.insert("queue".into(), Value::String("default".into()));
            }
            Some(Value::String(q)) => {
                crate::config::validate_queue_name(q).map_err(|reason| bad("queue", &self.fields["queue"], reason))?
            }
            Some(v) => return Err(bad("queue", v, "must be a string")),
        }
        if !self.fields.contains_key("retry") {
            self.fields.insert("retry".into(), Value::Bool(true));
        }
        match self.fields.get("jid") {
            None => {}
            Some(Value::String(j)) if valid_jid(j) => {}
            Some(v) => return Err(bad("jid", v, JID_RULE)),
        }
        numbers::check_for_push(&self.fields).map_err(|(field, value, reason)| bad(field, value, reason))?;
        match self.fields.get("bid") {
            None => {}
            Some(Value::String(b)) if valid_jid(b) => {}
            Some(v) => return Err(bad("bid", v, JID_RULE)),
        }
        match self.fields.get("keep_expired") {
            None | Some(Value::Bool(_)) => {}
            Some(v) => return Err(bad("keep_expired", v, "must be true or false")),
        }
        match self.fields.get("limits") {
            None => {}
            Some(Value::Array(names)) if !names.is_empty() && names.len() <= LIMITS_MAX => {
                for (i, name) in names.iter().enumerate() {
                    let field = format!("limits[{i}]");
                    match name {
                        Value::String(text) => check_limiter_name(text).map_err(|reason| bad(&field, name, reason))?,
                        other => return Err(bad(&field, other, "must be a limiter's name")),
                    }
                    // A job holding a place of a limiter waits for itself
                    // when it asks that limiter again: it would never run.
                    if names[..i].contains(name) {
                        return Err(bad(&field, name, "names a limiter listed before it"));
                    }
                }
            }
            Some(v) => return Err(bad("limits", v, "must be a list of 1 to 8 limiter names")),
        }
        Ok(())
    }

    /// Fills what a push adds: `jid`, `created_at`. Validates first.
    pub(crate) fn prepare_for_push(&mut self, now: f64) -> Result<()> {
        self.validate()?;
        if !self.fields.contains_key("jid") {
            self.fields.insert("jid".into(), Value::String(new_jid()));
        }
        if !self.fields.contains_key("created_at") {
            self.fields.insert("created_at".into(), float(now));
        }
        // Counted from the push, on the fleet's clock (`now`).
        if let Some(ttl) = self.fields.remove("expires_in").and_then(|t| t.as_f64()) {
            let at = self.expiry().map_or(now + ttl, |at| at.min(now + ttl));
            self.fields.insert("expires_at".into(), float(at));
        }
        if self.unique_for_secs().is_some() {
            let digest = unique_digest(self.class(), self.queue_name(), self.args_slice());
            self.fields.insert("unique_digest".into(), Value::String(digest));
        }
        Ok(())
    }

    /// The batch this job belongs to (`bid`), if any (see [`crate::Batch`]).
    pub fn batch_id(&self) -> Option<&str> {
        self.str_field("bid").filter(|bid| !bid.is_empty())
    }

    /// Does its batch keep what it returns (`batch_result`: a workflow
    /// step's job whose result the next step takes; see [`crate::Workflow`])?
    pub fn keeps_result_in_batch(&self) -> bool {
        self.fields.get("batch_result") == Some(&Value::Bool(true)) && self.batch_id().is_some()
    }

    /// `result_ttl` in whole seconds, if the job keeps its result.
    pub fn result_ttl_secs(&self) -> Option<u64> {
        self.fields
            .get("result_ttl")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite() && *t >= 1.0)
            .map(|t| t.ceil() as u64)
    }

    /// Its time limit (`timeout`), if it has one.
    pub fn timeout_secs(&self) -> Option<f64> {
        self.fields
            .get("timeout")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite() && *t > 0.0)
    }

    /// `unique_for` in seconds, if the job is unique.
    pub fn unique_for_secs(&self) -> Option<f64> {
        self.fields.get("unique_for").and_then(Value::as_f64)
    }
    /// The digest naming the job's unique lock, once pushed as unique.
    pub fn unique_digest(&self) -> Option<&str> {
        self.str_field("unique_digest").filter(|d| !d.is_empty())
    }
    /// The periodic entry whose run lock this job owns: set only for jobs of
    /// `until_executed` entries.
    pub fn run_lock_pjid(&self) -> Option<&str> {
        let until_executed = matches!(self.fields.get("periodic_until_executed"), Some(Value::Bool(true)));
        self.str_field("periodic_pjid")
            .filter(|p| until_executed && !p.is_empty())
    }

    /// The rate limiters it runs within (see [`Job::limits`]).
    pub fn limit_names(&self) -> Vec<&str> {
        match self.fields.get("limits") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }
    /// When it expires unstarted (epoch seconds), if it does.
    pub fn expiry(&self) -> Option<f64> {
        self.fields.get("expires_at").and_then(Value::as_f64)
    }
    /// Is it filed in `dead` when it expires (else dropped)?
    pub fn keeps_expired(&self) -> bool {
        matches!(self.fields.get("keep_expired"), Some(Value::Bool(true)))
    }
    /// How many times it was rescheduled because a limiter was full.
    pub fn over_limit_count(&self) -> u32 {
        self.fields
            .get("over_limit")
            .and_then(Value::as_u64)
            .map_or(0, |n| n.min(u32::MAX as u64) as u32)
    }

    /// The handler name.
    pub fn class(&self) -> &str {
        self.str_field("class").unwrap_or("")
    }
    /// The name to show people: a wrapper's job (`wrapped`, as an ActiveJob
    /// adapter pushes) rather than the wrapper.
    pub fn display_class(&self) -> &str {
        display_class_of(&self.fields)
    }
    /// The arguments to show people: a wrapped ActiveJob's `arguments`
    /// rather than the serialized job the wrapper takes.
    pub fn display_args(&self) -> &[Value] {
        display_args_of(&self.fields).unwrap_or_else(|| self.args_slice())
    }
    /// The queue.
    pub fn queue_name(&self) -> &str {
        self.str_field("queue").unwrap_or("default")
    }
    /// Its priority level within its queue (5 when it has none, or one out
    /// of range: such a payload, pushed raw, runs at the default level).
    pub fn priority_level(&self) -> u8 {
        match self.fields.get("priority").and_then(Value::as_u64) {
            Some(level) if level <= u64::from(HIGHEST_PRIORITY) => level as u8,
            _ => DEFAULT_PRIORITY,
        }
    }
    /// The job id (empty before a push gives one).
    pub fn jid_str(&self) -> &str {
        self.str_field("jid").unwrap_or("")
    }
    /// The arguments.
    pub fn args_slice(&self) -> &[Value] {
        match self.fields.get("args") {
            Some(Value::Array(a)) => a,
            _ => &[],
        }
    }
    /// `at`, if the job is scheduled.
    pub fn run_at(&self) -> Option<f64> {
        self.fields.get("at").and_then(Value::as_f64)
    }
    /// What a failure does.
    pub fn retry_policy(&self) -> Retry {
        match self.fields.get("retry") {
            Some(Value::Bool(false)) => Retry::Discard,
            Some(v) => match v.as_u64() {
                Some(n) => Retry::Max(n.min(u32::MAX as u64) as u32),
                None => Retry::Max(DEFAULT_MAX_RETRIES),
            },
            None => Retry::Max(DEFAULT_MAX_RETRIES),
        }
    }
    /// Failures so far (0 for a job that never failed).
    pub fn retry_count(&self) -> u32 {
        self.fields
            .get("retry_count")
            .and_then(Value::as_u64)
            .map_or(0, |n| n.min(u32::MAX as u64) as u32)
    }
    /// Any field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }
    /// A text field.
    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }
    /// Every field.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }
    pub(crate) fn set(&mut self, key: &str, value: Value) {
        self.fields.insert(key.to_string(), value);
    }
    pub(crate) fn remove(&mut self, key: &str) {
        self.fields.remove(key);
    }
    /// As JSON text (big integers exact, field order kept).
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.fields).expect("a JSON map always serializes")
    }
    /// As a JSON value.
    pub fn into_value(self) -> Value {
        Value::Object(self.fields)
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

impl std::fmt::Display for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}(jid={})", self.class(), self.jid_str())
    }
}

/// The unique-lock digest: SHA-1 (hex) of `[class, queue, args]` as JSON.
/// Computed by the core for every language, so a Python and a Ruby push of
/// the same job collide.
pub fn unique_digest(class: &str, queue: &str, args: &[Value]) -> String {
    use sha1::Digest as _;
    let text = serde_json::to_string(&(class, queue, args)).expect("JSON values always serialize");
    hex::encode(sha1::Sha1::digest(text.as_bytes()))
}

/// The most rate limiters one job may run within.
pub const LIMITS_MAX: usize = 8;

/// A rate limiter's name every process can share: at most 128 bytes, no
/// spaces, control characters or braces (they would move its keys off the
/// namespace's cluster slot). The reason when it is not.
pub(crate) fn check_limiter_name(name: &str) -> std::result::Result<(), &'static str> {
    if name.is_empty() {
        Err("must not be empty")
    } else if name.len() > 128 {
        Err("must be at most 128 bytes")
    } else if name
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '{' || c == '}')
    {
        Err("must not hold spaces, control characters or braces")
    } else {
        Ok(())
    }
}

/// 24 lowercase hex characters (96 random bits).
pub fn new_jid() -> String {
    hex::encode(rand::random::<[u8; 12]>())
}

/// Epoch seconds as a float.
pub fn now() -> f64 {
    let host = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    host + f64::from_bits(HOST_CLOCK_SKEW.load(std::sync::atomic::Ordering::Relaxed))
}

/// Seconds added to the host's clock: 0, except where a test plays a host
/// whose clock is off (`cogworker::testing::skew_host_clock`).
pub(crate) static HOST_CLOCK_SKEW: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A float timestamp with millisecond precision (no `1e9`-style output).
pub(crate) fn float(seconds: f64) -> Value {
    let rounded = (seconds * 1000.0).round() / 1000.0;
    serde_json::Number::from_f64(rounded).map_or(Value::Null, Value::Number)
}

/// What a jid may be: what a log line, a Redis key and a URL can carry as
/// it is (hex, UUIDs, ULIDs, `order-42:refund`).
pub(crate) const JID_RULE: &str = "must be 1 to 64 characters, each a letter, digit, '-', '_', '.' or ':'";

/// Does `jid` follow [`JID_RULE`]?
pub fn valid_jid(jid: &str) -> bool {
    (1..=JID_MAX_LEN).contains(&jid.len())
        && jid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// Do lists and maps nest more than `limit` deep in `value` (a scalar 0,
/// `[]` 1, `[[1]]` 2)? It descends at most `limit + 1` levels, so however
/// deep the value, the recursion is bounded; and it allocates nothing
/// (every fetched job's arguments pass here).
pub fn nests_deeper_than(value: &Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => limit == 0 || items.iter().any(|item| nests_deeper_than(item, limit - 1)),
        Value::Object(map) => limit == 0 || map.values().any(|item| nests_deeper_than(item, limit - 1)),
        _ => false,
    }
}

/// Why an argument is too deep: its field and the reason.
fn check_nesting(args: &[Value]) -> std::result::Result<(), (String, String)> {
    match args.iter().position(|arg| nests_deeper_than(arg, MAX_NESTING)) {
        Some(i) => Err((format!("args[{i}]"), too_deep())),
        None => Ok(()),
    }
}

/// The one wording of [`MAX_NESTING`] in errors.
pub fn too_deep() -> String {
    format!("nests lists and maps deeper than {MAX_NESTING} levels (a value that contains itself?)")
}

/// Valid UTF-8 (invalid bytes replaced), at most `limit` characters.
pub fn safe_string(text: impl AsRef<[u8]>, limit: usize) -> String {
    let text = String::from_utf8_lossy(text.as_ref());
    match text.char_indices().nth(limit) {
        Some((cut, _)) => text[..cut].to_string(),
        None => text.into_owned(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// [`Job::display_class`] of a job as a JSON object (a busy slot's payload).
pub fn display_class_of(job: &Map<String, Value>) -> &str {
    let named = |field: &str| job.get(field).and_then(Value::as_str).filter(|s| !s.is_empty());
    named("wrapped").or_else(|| named("class")).unwrap_or("")
}

/// A wrapped job's own arguments: `args[0].arguments` when `wrapped` is set.
pub fn display_args_of(job: &Map<String, Value>) -> Option<&[Value]> {
    job.get("wrapped")?;
    match job.get("args")?.get(0)?.get("arguments")? {
        Value::Array(arguments) => Some(arguments),
        _ => None,
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_wrapper_shows_the_job_it_wraps() {
        let plain = Job::new("Mailer");
        assert_eq!((plain.display_class(), plain.display_args().len()), ("Mailer", 0));
        let wrapped = Job::parse(
            br#"{"class":"Wrapper","wrapped":"SignupJob","args":[{"job_class":"SignupJob","arguments":[1,"a"]}]}"#,
        )
        .unwrap();
        assert_eq!(wrapped.display_class(), "SignupJob");
        assert_eq!(wrapped.display_args(), &[serde_json::json!(1), serde_json::json!("a")]);
        let odd = Job::parse(br#"{"class":"Wrapper","wrapped":"","args":["x"]}"#).unwrap();
        assert_eq!((odd.display_class(), odd.display_args().len()), ("Wrapper", 1));
    }
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_and_big_integers_survive_a_round_trip() {
        let raw = br#"{"class":"A","args":[123456789012345678901234567890,1.5],"x_trace":{"a":1}}"#;
        let job = Job::parse(raw).unwrap();
        assert_eq!(job.to_json().as_bytes(), raw);
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        assert!(Job::parse(b"not json").unwrap_err().contains("JSON"));
        assert!(Job::parse(b"[1,2]").unwrap_err().contains("array"));
        assert!(Job::parse(br#"{"args":[]}"#).unwrap_err().contains("class"));
        assert!(Job::parse(b"{\"class\":\"A\",\"args\":[\"\xff\"]}").is_err());
        assert!(Job::parse(br#"{"class":"A","args":3}"#).unwrap_err().contains("args"));
    }

    #[test]
    fn validation_names_the_field() {
        for (value, field) in [
            (json!({"args": []}), "class"),
            (json!({"class": ""}), "class"),
            (json!({"class": "A", "args": {}}), "args"),
            (json!({"class": "A", "queue": ""}), "queue"),
            (json!({"class": "A", "retry": "yes"}), "retry"),
            (json!({"class": "A", "retry": -1}), "retry"),
            (json!({"class": "A", "at": "soon"}), "at"),
            (json!({"class": "A", "unique_for": 0}), "unique_for"),
        ] {
            let err = Job::from_value(value).unwrap_err().to_string();
            assert!(err.contains(field), "{err}");
        }
        assert!(Job::from_value(json!([1])).is_err());
    }

    fn nested(depth: usize) -> Value {
        (1..depth).fold(json!([]), |inner, _| json!([inner]))
    }

    #[test]
    fn one_nesting_limit_at_push_and_at_parse() {
        assert!(!nests_deeper_than(&json!(1), 0), "a scalar nests 0 deep");
        let three = json!({"a": [[1], 2]});
        assert!(nests_deeper_than(&three, 2) && !nests_deeper_than(&three, 3), "3 deep");
        assert!(nests_deeper_than(&nested(MAX_NESTING), MAX_NESTING - 1));
        assert!(!nests_deeper_than(&nested(MAX_NESTING), MAX_NESTING));
        let push = |depth| Job::from_value(json!({"class": "A", "args": [1, nested(depth)]}));
        assert!(push(MAX_NESTING).is_ok());
        let err = push(MAX_NESTING + 1).unwrap_err();
        assert_eq!(err.field(), Some("args[1]"));
        assert!(err.to_string().contains("deeper than 100 levels"), "{err}");
        let parse = |depth| Job::parse(json!({"class": "A", "args": [nested(depth)]}).to_string().as_bytes());
        assert!(parse(MAX_NESTING).is_ok());
        let reason = parse(MAX_NESTING + 1).unwrap_err();
        assert!(
            reason.contains("`args[0]` nests lists and maps deeper than 100 levels"),
            "{reason}"
        );
    }

    #[test]
    fn a_jid_is_what_a_log_line_and_a_key_carry_as_it_is() {
        for jid in [
            "0123456789abcdef01234567",
            "3f2a9c1e-8b7d-4e21-9a0b-1c2d3e4f5a6b",
            "order-42:refund_1.2",
        ] {
            assert!(Job::from_value(json!({"class": "A", "jid": jid})).is_ok(), "{jid}");
        }
        let too_long = "a".repeat(JID_MAX_LEN + 1);
        for jid in ["", "a\nINFO forged", "\u{1b}[31mred", "a b", "a\"b", too_long.as_str()] {
            let err = Job::from_value(json!({"class": "A", "jid": jid})).unwrap_err();
            assert_eq!(err.field(), Some("jid"), "{jid:?}");
        }
    }

    #[test]
    fn unparseable_wrapper_keeps_the_exact_bytes() {
        let raw = b"\xff\xfe garbage";
        let job = Job::unparseable(raw, "default", "not valid JSON");
        assert_eq!(job.class(), UNPARSEABLE_CLASS);
        assert_eq!(job.retry_policy(), Retry::Discard);
        use base64::Engine as _;
        let kept = base64::engine::general_purpose::STANDARD
            .decode(job.str_field("raw_payload_base64").unwrap())
            .unwrap();
        assert_eq!(kept, raw);
        // And the wrapper itself is valid JSON that parses as a job.
        Job::parse(job.to_json().as_bytes()).unwrap();
    }

    #[test]
    fn safe_string_replaces_invalid_bytes_and_truncates_on_char_boundaries() {
        assert_eq!(safe_string(b"ok \xff", 100), "ok \u{fffd}");
        assert_eq!(safe_string("ééé", 2), "éé");
    }

    #[test]
    fn unique_digest_depends_on_class_queue_and_args_only() {
        let mut a = Job::new("A").args([json!(1)]).unique_for(60.0);
        let mut b = Job::new("A").args([json!(1)]).unique_for(5.0).jid("x");
        a.prepare_for_push(1.0).unwrap();
        b.prepare_for_push(2.0).unwrap();
        assert_eq!(a.unique_digest(), b.unique_digest());
        let mut c = Job::new("A").args([json!(2)]).unique_for(60.0);
        c.prepare_for_push(1.0).unwrap();
        assert_ne!(a.unique_digest(), c.unique_digest());
        let mut plain = Job::new("A");
        plain.prepare_for_push(1.0).unwrap();
        assert_eq!(plain.unique_digest(), None);
    }

    #[test]
    fn retry_policy_reads_bool_and_integer() {
        assert_eq!(Job::new("A").retry_policy(), Retry::Max(25));
        assert_eq!(Job::new("A").retry(Retry::Discard).retry_policy(), Retry::Discard);
        assert_eq!(Job::new("A").retry(Retry::Max(3)).retry_policy(), Retry::Max(3));
    }
}
