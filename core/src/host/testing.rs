//! The testing modes every host offers (Python's `cogworker.testing`,
//! Ruby's `Cogworker::Testing`), decided once for all of them:
//!
//! - **fake**: a push is recorded, not sent; the host runs recorded jobs
//!   when the test asks (`drain`, `perform_one`);
//! - **inline**: a push runs its handler at once, in the caller.
//!
//! A push in either mode is validated and filled exactly as a real push
//! (the host hands over the job a push would write), and a unique job
//! (`unique_for`) whose duplicate is still recorded is refused, as Redis
//! would refuse it (a singleton's duplicate answers with the recorded
//! job's jid), and a debounced or replacing push collapses into the
//! recorded job of its key (see `crate::flow`); a throttled push is recorded (no clock runs in
//! a test). The results of jobs run in a testing mode are kept here,
//! so `result(jid)` and `status(jid)` answer without Redis.
//!
//! What is kept, and when it goes: entering a mode from real pushes starts
//! with nothing recorded; leaving a mode (the end of a block) keeps what was
//! recorded, so a test can look at it after the block, until the next
//! entry or an explicit `clear`.

use crate::error::Error;
use crate::job::Job;
use crate::results::JobOutcome;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;

/// A testing mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestingMode {
    /// Pushes are recorded.
    Fake,
    /// Pushes run their handler at once.
    Inline,
}

impl TestingMode {
    /// `fake` or `inline`, as hosts name them; `None` for real pushes.
    pub fn parse(name: Option<&str>) -> crate::error::Result<Option<Self>> {
        match name {
            None => Ok(None),
            Some("fake") => Ok(Some(TestingMode::Fake)),
            Some("inline") => Ok(Some(TestingMode::Inline)),
            Some(other) => Err(crate::error::Error::invalid_argument(
                "mode",
                other,
                "one of fake, inline or none",
            )),
        }
    }

    /// `fake` or `inline`.
    pub fn name(self) -> &'static str {
        match self {
            TestingMode::Fake => "fake",
            TestingMode::Inline => "inline",
        }
    }
}

/// What became of a push in a testing mode.
#[derive(Debug, PartialEq)]
pub enum Recorded {
    /// Recorded (fake mode): the host returns the jid.
    Kept(String),
    /// A unique job whose duplicate is still recorded: the push returns nothing.
    Refused,
    /// Inline mode: the host runs the job (this payload) now, and reports
    /// its outcome with [`settled`].
    RunNow(Value),
}

#[derive(Default)]
struct State {
    mode: Option<TestingMode>,
    /// Recorded jobs by class, oldest first.
    jobs: BTreeMap<String, VecDeque<Value>>,
    /// Outcomes of jobs run in a testing mode, by jid.
    results: HashMap<String, JobOutcome>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let mut guard = STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(guard.get_or_insert_with(State::default))
}

/// Switches to `mode` (`None`: real pushes); returns the mode before, to
/// restore at the end of a block. Entering a mode from real pushes starts
/// with nothing recorded.
pub fn set_mode(mode: Option<TestingMode>) -> Option<TestingMode> {
    with_state(|state| {
        let previous = state.mode;
        if previous.is_none() && mode.is_some() {
            state.jobs.clear();
            state.results.clear();
        }
        state.mode = mode;
        previous
    })
}

/// The mode pushes are in (`None`: real pushes).
pub fn mode() -> Option<TestingMode> {
    with_state(|state| state.mode)
}

/// A push in the current testing mode: `job` is what a real push would
/// write (validated and filled). Real pushes (no mode) record nothing and
/// answer `Kept` with the jid; hosts only call this in a mode.
pub fn record(job: Job) -> Recorded {
    with_state(|state| {
        let jid = job.jid_str().to_string();
        if state.mode == Some(TestingMode::Inline) {
            return Recorded::RunNow(job.into_value());
        }
        if let Some(digest) = job.unique_digest() {
            let holder = state
                .jobs
                .values()
                .flatten()
                .find(|recorded| recorded["unique_digest"].as_str() == Some(digest));
            if let Some(holder) = holder {
                // A singleton (a unique job with a key) answers with the
                // pending job's jid, as a real push does.
                return match job.flow_key() {
                    Some(_) => Recorded::Kept(holder["jid"].as_str().unwrap_or_default().to_string()),
                    None => Recorded::Refused,
                };
            }
        }
        let policy = match (job.debounce_secs(), job.replaces()) {
            (Some(_), _) => Some("debounce"),
            (None, true) => Some("replace"),
            (None, false) => None,
        };
        if let Some(policy) = policy {
            // A debounced or replacing push collapses into the recorded
            // job of its class, queue and key: the last args, under the
            // first jid.
            let same_burst = |recorded: &Value| {
                recorded.get(policy).is_some()
                    && recorded["queue"] == job.fields()["queue"]
                    && recorded["key"].as_str() == job.flow_key()
            };
            let burst = state
                .jobs
                .get_mut(job.class())
                .and_then(|jobs| jobs.iter_mut().find(|r| same_burst(r)));
            if let Some(burst) = burst {
                burst["args"] = Value::Array(job.args_slice().to_vec());
                return Recorded::Kept(burst["jid"].as_str().unwrap_or_default().to_string());
            }
        }
        state
            .jobs
            .entry(job.class().to_string())
            .or_default()
            .push_back(job.into_value());
        Recorded::Kept(jid)
    })
}

/// The recorded jobs of `class` (every class: `None`), oldest first.
pub fn jobs(class: Option<&str>) -> Vec<Value> {
    with_state(|state| match class {
        Some(class) => state
            .jobs
            .get(class)
            .map(|j| j.iter().cloned().collect())
            .unwrap_or_default(),
        None => state.jobs.values().flatten().cloned().collect(),
    })
}

/// Classes with recorded jobs.
pub fn classes() -> Vec<String> {
    with_state(|state| {
        state
            .jobs
            .iter()
            .filter(|(_, jobs)| !jobs.is_empty())
            .map(|(class, _)| class.clone())
            .collect()
    })
}

/// Takes the oldest recorded job of `class`, for the host to run (and
/// report with [`settled`]).
pub fn take_oldest(class: &str) -> Option<Value> {
    with_state(|state| state.jobs.get_mut(class).and_then(VecDeque::pop_front))
}

/// Forgets the recorded jobs of `class` (every class, and every kept
/// result: `None`).
pub fn clear(class: Option<&str>) {
    with_state(|state| match class {
        Some(class) => {
            state.jobs.remove(class);
        }
        None => {
            state.jobs.clear();
            state.results.clear();
        }
    })
}

/// A job run in a testing mode ended: `Ok(value)` (what the handler
/// returned) or `Err((error_class, error_message))`. Kept for `result`
/// and `status` when the job asked for its result (`result_ttl`).
pub fn settled(job: &Value, outcome: Result<Value, (String, String)>) {
    if job.get("result_ttl").is_none_or(Value::is_null) {
        return;
    }
    let jid = job["jid"].as_str().unwrap_or_default().to_string();
    let outcome = match outcome {
        Ok(value) => JobOutcome::Succeeded(value),
        Err((error_class, error_message)) => JobOutcome::Failed(json!({
            "status": "failed",
            "jid": jid,
            "class": job["class"],
            "queue": job["queue"],
            "args": job["args"],
            "error_class": error_class,
            "error_message": error_message,
        })),
    };
    with_state(|state| state.results.insert(jid, outcome));
}

/// Runs `job` (recorded, or pushed in inline mode) with the host's `call`
/// (the handler's value, or what it raised) and keeps its outcome (see
/// [`settled`]): `value` converts what the handler returned, when the job
/// keeps its result; `describe` names what it raised (class, message),
/// which is then returned as it was.
pub fn run<V, E>(
    job: &Value,
    call: impl FnOnce() -> Result<V, E>,
    value: impl FnOnce(&V) -> Result<Value, E>,
    describe: impl FnOnce(&E) -> (String, String),
) -> Result<V, E> {
    let keeps_result = job.get("result_ttl").is_some_and(|ttl| !ttl.is_null());
    match call() {
        Ok(returned) => {
            if keeps_result {
                settled(job, Ok(value(&returned)?));
            }
            Ok(returned)
        }
        Err(raised) => {
            settled(job, Err(describe(&raised)));
            Err(raised)
        }
    }
}

/// Runs the oldest recorded job of `class` with the host's `run`; `None`
/// when there is none.
pub fn perform_one<V, E>(class: &str, run: impl FnOnce(Value) -> Result<V, E>) -> Option<Result<V, E>> {
    take_oldest(class).map(run)
}

/// What a testing mode raises for a job of a class no handler is
/// registered for in this process (a worker files such a job as
/// `cogworker::UnknownHandler`): the same in every host, where Python
/// raised `LookupError` and Ruby `NameError`.
pub fn unknown_class(class: &str) -> Error {
    Error::invalid_argument(
        "class",
        format!("{class:?}"),
        "no handler is registered for it in this process",
    )
}

/// What `perform_one` says when there is nothing to run.
pub fn nothing_recorded(class: &str) -> String {
    format!("no {class} jobs recorded")
}

/// Runs the recorded jobs of `class` (`None`: of every class, class after
/// class), oldest first, with the host's `run`, jobs they push included,
/// until none is left; how many ran. What a job raises ends the drain.
pub fn drain<E>(class: Option<&str>, mut run: impl FnMut(Value) -> Result<(), E>) -> Result<usize, E> {
    let mut count = 0;
    loop {
        let next = match class {
            Some(class) => take_oldest(class),
            None => classes().first().and_then(|class| take_oldest(class)),
        };
        let Some(job) = next else {
            return Ok(count);
        };
        run(job)?;
        count += 1;
    }
}

/// `result(jid)` in a testing mode: what a job run here came to; a
/// recorded job is `queued`; anything else `unknown`.
pub fn result(jid: &str) -> JobOutcome {
    with_state(|state| {
        if let Some(outcome) = state.results.get(jid) {
            return outcome.clone();
        }
        let recorded = state
            .jobs
            .values()
            .flatten()
            .any(|job| job["jid"].as_str() == Some(jid));
        JobOutcome::Pending(if recorded { "queued" } else { "unknown" }.into())
    })
}

/// `status(jid)` in a testing mode.
pub fn status(jid: &str) -> String {
    match result(jid) {
        JobOutcome::Succeeded(_) => "succeeded".into(),
        JobOutcome::Failed(record) => record["status"].as_str().unwrap_or("failed").into(),
        JobOutcome::Pending(status) => status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Job;

    fn job(args: Value) -> Job {
        let job = Job::new("Echo").args(args.as_array().unwrap().clone()).unique_for(60.0);
        crate::host::prepared(job).unwrap()
    }

    // One test: the modes are process-wide state.
    #[test]
    fn the_modes_record_refuse_keep_and_forget_as_documented() {
        assert_eq!(set_mode(Some(TestingMode::Fake)), None);
        let Recorded::Kept(first) = record(job(json!([1]))) else {
            panic!("kept")
        };
        assert_eq!(record(job(json!([1]))), Recorded::Refused, "a unique duplicate");
        assert!(matches!(record(job(json!([2]))), Recorded::Kept(_)));
        assert_eq!(status(&first), "queued");
        assert_eq!(set_mode(None), Some(TestingMode::Fake));
        assert_eq!(jobs(Some("Echo")).len(), 2, "kept after the block");
        assert_eq!(classes(), vec!["Echo".to_string()]);

        set_mode(Some(TestingMode::Inline));
        assert!(jobs(None).is_empty(), "entering from real pushes starts empty");
        let inline = crate::host::prepared(Job::new("Echo").args([json!(3)]).result_ttl(60.0)).unwrap();
        let Recorded::RunNow(payload) = record(inline) else {
            panic!("run")
        };
        settled(&payload, Ok(json!([3])));
        let jid = payload["jid"].as_str().unwrap();
        assert_eq!(result(jid), JobOutcome::Succeeded(json!([3])));
        assert_eq!(status(jid), "succeeded");
        set_mode(None);
        clear(None);
        assert_eq!(status(jid), "unknown");

        // A singleton's duplicate answers with the recorded jid; a
        // debounced push collapses into its key's recorded job.
        set_mode(Some(TestingMode::Fake));
        let prepared = |job: Job| crate::host::prepared(job).unwrap();
        let singleton = |n: i64| prepared(Job::new("Report").args([json!(n)]).key("r:1").unique_for(60.0));
        let Recorded::Kept(holder) = record(singleton(1)) else {
            panic!("kept")
        };
        assert_eq!(record(singleton(2)), Recorded::Kept(holder));
        let debounced = |n: i64| prepared(Job::new("Reindex").args([json!(n)]).key("d:1").debounce(5.0, None));
        let Recorded::Kept(burst) = record(debounced(1)) else {
            panic!("kept")
        };
        assert_eq!(record(debounced(2)), Recorded::Kept(burst));
        let reindexed = jobs(Some("Reindex"));
        assert_eq!((reindexed.len(), &reindexed[0]["args"]), (1, &json!([2])));
        set_mode(None);
        clear(None);
    }
}
