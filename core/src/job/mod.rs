//! The job: one JSON object (docs/internals.md). Unknown fields are kept as they are on
//! every path, so newer clients and other languages can add their own.

use serde_json::{Map, Value};
use std::sync::Arc;

mod builder;
mod numbers;
mod payload;
mod validate;
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
    /// Shared until changed (copy on write): a worker hands every job to
    /// its handler's task as a clone, which copied every field, twice the
    /// allocations of its parse, before.
    fields: Arc<Map<String, Value>>,
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
    /// The rate its class declares for its group (`group_rate` jobs per
    /// `group_rate_period` seconds, 1 s by default: at most that many of
    /// the group's jobs start per period, fleet-wide), if it carries a
    /// valid one and a group.
    pub fn declared_rate(&self) -> Option<(u64, f64)> {
        self.declared_rate_of_kind().map(|(limit, period, _)| (limit, period))
    }
    /// [`Job::declared_rate`] with how it counts ([`RATE_KINDS`]'s index:
    /// 0 window, 1 bucket, 2 leaky).
    pub(crate) fn declared_rate_of_kind(&self) -> Option<(u64, f64, usize)> {
        self.group_key()?;
        let limit = self
            .fields
            .get("group_rate")
            .and_then(Value::as_u64)
            .filter(|limit| (1..=GROUP_CAP_MAX).contains(limit))?;
        let period = match self.fields.get("group_rate_period") {
            None => 1.0,
            Some(period) => period.as_f64().filter(|p| *p > 0.0 && *p <= numbers::LONGEST_SECS)?,
        };
        let kind = match self.str_field("group_rate_kind") {
            None => 0,
            Some(kind) => RATE_KINDS.iter().position(|known| *known == kind)?,
        };
        Some((limit, period, kind))
    }
    /// The backlog cap its class declares for its group (`group_backlog`:
    /// at most that many of the group's jobs wait at its level), and
    /// whether a push past it drops the oldest (`group_backlog_full:
    /// "drop_oldest"`) rather than being refused, if it carries a valid one
    /// and a group.
    pub fn declared_backlog(&self) -> Option<(u64, bool)> {
        self.group_key()?;
        let most = self
            .fields
            .get("group_backlog")
            .and_then(Value::as_u64)
            .filter(|most| (1..=GROUP_BACKLOG_MAX).contains(most))?;
        Some((most, self.str_field("group_backlog_full") == Some("drop_oldest")))
    }
    /// What a push tells its group's declared limits of this job (see
    /// `scripts/group.lua`): `"<cap> <rate> <period> <backlog> <drop>
    /// <rate kind>"`, 0 for none, or `None` when it declares none.
    pub fn declared_limits(&self) -> Option<String> {
        let cap = self.declared_cap();
        let rate = self.declared_rate_of_kind();
        let backlog = self.declared_backlog();
        if cap.is_none() && rate.is_none() && backlog.is_none() {
            return None;
        }
        let (limit, period, kind) = rate.unwrap_or((0, 0.0, 0));
        let (most, drop) = backlog.unwrap_or((0, false));
        Some(format!(
            "{} {limit} {period} {most} {} {kind}",
            cap.unwrap_or(0),
            u8::from(drop)
        ))
    }
    /// Its flow key (see [`crate::flow`]): the key whose pushes a
    /// debounce collapses and a singleton keeps to one job, if it carries
    /// a valid one.
    pub fn flow_key(&self) -> Option<&str> {
        self.str_field("key").filter(|key| valid_group(key))
    }
    /// The digest of its class, queue and flow key ([`keyed_digest`]): what
    /// names its key's state (a debounce's burst, a throttle's window, a
    /// replaced job, a singleton's lock), if it carries a key.
    pub(crate) fn flow_digest(&self) -> Option<String> {
        let key = self.flow_key()?;
        Some(keyed_digest(self.class(), self.queue_name(), key))
    }
    /// Its debounce window and longest wait in seconds, if it is debounced
    /// (see [`crate::flow`]).
    pub fn debounce_secs(&self) -> Option<(f64, Option<f64>)> {
        let window = self.fields.get("debounce").and_then(Value::as_f64)?;
        Some((window, self.fields.get("debounce_max").and_then(Value::as_f64)))
    }
    /// Is it a job of a sequence (`sequence: true`, see [`crate::flow`]):
    /// its key's jobs run one at a time in push order, a failed one's
    /// retry before the next?
    pub fn in_sequence(&self) -> bool {
        matches!(self.fields.get("sequence"), Some(Value::Bool(true))) && self.group_key().is_some()
    }
    /// Does a push of it replace its key's job still waiting on its queue
    /// (`replace: true`, see [`crate::flow`])?
    pub fn replaces(&self) -> bool {
        matches!(self.fields.get("replace"), Some(Value::Bool(true)))
    }
    /// Its throttle window in seconds, and whether a push before the key's
    /// next window is dropped (`throttle_excess: "drop"`) rather than
    /// delayed, if it is throttled (see [`crate::flow`]).
    pub fn throttle_secs(&self) -> Option<(f64, bool)> {
        let window = self.fields.get("throttle").and_then(Value::as_f64)?;
        Some((window, self.str_field("throttle_excess") == Some("drop")))
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
    /// Its group within its queue (see [`crate::groups`]), if it carries
    /// a valid one.
    pub fn group_key(&self) -> Option<&str> {
        self.str_field("group").filter(|group| valid_group(group))
    }
    /// The concurrency cap its class declares for its group (`group_cap`:
    /// at most that many of the group's jobs run at once, fleet-wide), if
    /// it carries a valid one and a group.
    pub fn declared_cap(&self) -> Option<u64> {
        self.group_key()?;
        self.fields
            .get("group_cap")
            .and_then(Value::as_u64)
            .filter(|cap| (1..=GROUP_CAP_MAX).contains(cap))
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
    /// The cursor it resumes from (its last run's checkpoint, or the one
    /// it was pushed with), if any (see [`crate::long_jobs`]).
    pub fn cursor(&self) -> Option<&Value> {
        self.fields.get("cursor").filter(|cursor| !cursor.is_null())
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
    /// Takes the push option `min_replicas_acked` off the job (see
    /// [`Job::min_replicas_acked`]): how many replicas its push waits for,
    /// or `None` where it asks nothing. A value out of range is left on the
    /// job for its validation to refuse, naming it.
    pub(crate) fn take_min_replicas_acked(&mut self) -> Option<u32> {
        let wanted = numbers::replicas(self.fields.get("min_replicas_acked")?)?;
        self.remove("min_replicas_acked");
        Some(wanted)
    }
    pub(crate) fn set(&mut self, key: &str, value: Value) {
        self.fields_mut().insert(key.to_string(), value);
    }
    pub(crate) fn remove(&mut self, key: &str) {
        self.fields_mut().remove(key);
    }
    /// The fields, to change: this job's own copy from here on.
    fn fields_mut(&mut self) -> &mut Map<String, Value> {
        Arc::make_mut(&mut self.fields)
    }
    fn of(fields: Map<String, Value>) -> Job {
        Job {
            fields: Arc::new(fields),
        }
    }
    /// As JSON text (big integers exact, field order kept).
    pub fn to_json(&self) -> String {
        serde_json::to_string(&*self.fields).expect("a JSON map always serializes")
    }
    /// As a JSON value.
    pub fn into_value(self) -> Value {
        Value::Object(Arc::unwrap_or_clone(self.fields))
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

/// The digest of a unique job's lock that carries a flow key (a
/// singleton, see [`crate::flow`]): of its class, queue and key, whatever
/// its args, and never that of a job without a key.
pub fn keyed_digest(class: &str, queue: &str, key: &str) -> String {
    use sha1::Digest as _;
    let text = serde_json::to_string(&("key", class, queue, key)).expect("strings always serialize");
    hex::encode(sha1::Sha1::digest(text.as_bytes()))
}

/// Longest group key (see [`crate::groups`]), in characters.
pub const GROUP_MAX_LEN: usize = 256;

/// The largest concurrency cap a group may have (a job's `group_cap`, or
/// one set by [`crate::Api::set_group_cap`]).
pub const GROUP_CAP_MAX: u64 = 1_000_000;

/// The largest backlog cap a group may have (a job's `group_backlog`).
pub const GROUP_BACKLOG_MAX: u64 = 1_000_000_000;

/// How a group's rate may count (`group_rate_kind`), in the order the
/// fetch script numbers them (`scripts/fetch_reliable.lua`).
pub const RATE_KINDS: [&str; 3] = ["window", "bucket", "leaky"];

/// What `group_rate_kind` may be, as a push's error says it.
pub(crate) const RATE_KIND_RULE: &str = "must be \"window\", \"bucket\" or \"leaky\"";

/// What a group key may be, as a push's error says it.
pub(crate) const GROUP_RULE: &str = "must be a string of 1 to 256 characters, without control characters";

/// Is `group` a key a job may carry ([`GROUP_RULE`])?
pub(crate) fn valid_group(group: &str) -> bool {
    !group.is_empty() && group.chars().count() <= GROUP_MAX_LEN && !group.chars().any(char::is_control)
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
/// whose clock is off (`cogworker::redis_server::skew_host_clock`).
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

/// Largest cursor a job carries or checkpoints, in bytes of JSON (see
/// [`crate::long_jobs`]).
pub const CURSOR_MAX: usize = 64 * 1024;

/// Why `cursor` cannot be a job's cursor, if it cannot: a cursor is any
/// JSON value (null is none) of at most [`CURSOR_MAX`] bytes, nested at
/// most [`MAX_NESTING`] deep.
pub(crate) fn cursor_rule_broken(cursor: &Value) -> Option<String> {
    json_rule_broken(cursor, CURSOR_MAX)
}

/// Why `value` breaks the rule of a JSON value a job reports of itself
/// (at most `most` bytes, nested at most [`MAX_NESTING`] deep), if it does.
pub(crate) fn json_rule_broken(value: &Value, most: usize) -> Option<String> {
    if nests_deeper_than(value, MAX_NESTING) {
        return Some(too_deep());
    }
    let size = serde_json::to_vec(value).map_or(usize::MAX, |json| json.len());
    (size > most).then(|| format!("must be at most {most} bytes of JSON, not {size}"))
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
