//! The testing modes' state, kept by the core (`cogworker::host::testing`):
//! `lib/cogworker/testing/modes.rb` calls these and runs the jobs.

use crate::convert;
use crate::errors::to_ruby;
use cogworker::host::testing::{self, TestingMode};
use cogworker::JobOutcome;
use magnus::{value::ReprValue, Error, Ruby, Value};

/// Switches to `mode` ("fake", "inline" or nil); returns the mode before.
pub fn set_mode(ruby: &Ruby, mode: Option<String>) -> Result<Option<&'static str>, Error> {
    let mode = TestingMode::parse(mode.as_deref()).map_err(|e| to_ruby(ruby, e))?;
    Ok(testing::set_mode(mode).map(TestingMode::name))
}

/// "fake", "inline", or nil.
pub fn mode() -> Option<&'static str> {
    testing::mode().map(TestingMode::name)
}

/// The recorded jobs of `class_name` (every class: nil), oldest first.
pub fn jobs(ruby: &Ruby, class_name: Option<String>) -> Value {
    convert::array_from_json(ruby, &testing::jobs(class_name.as_deref()))
}

/// Runs the oldest recorded job of `class_name` with `run.call(job)`; its
/// value. IndexError when none is recorded.
pub fn perform_one(ruby: &Ruby, class_name: String, run: Value) -> Result<Value, Error> {
    testing::perform_one(&class_name, |job| {
        run.funcall("call", (convert::from_json(ruby, &job),))
    })
    .unwrap_or_else(|| {
        Err(Error::new(
            ruby.exception_index_error(),
            testing::nothing_recorded(&class_name),
        ))
    })
}

/// Runs the recorded jobs of `class_name` (every class: nil) with
/// `run.call(job)`, jobs they push included, until none is left; how many.
pub fn drain(ruby: &Ruby, run: Value, class_name: Option<String>) -> Result<usize, Error> {
    testing::drain(class_name.as_deref(), |job| {
        run.funcall::<_, _, Value>("call", (convert::from_json(ruby, &job),))
            .map(drop)
    })
}

/// Runs `job` with `call.call` (the job's `perform`), keeping its outcome
/// when the job keeps its result; returns its value, or raises what it
/// raised.
pub fn run(ruby: &Ruby, job: Value, call: Value) -> Result<Value, Error> {
    let job = convert::value(ruby, job).to_json("job").map_err(|e| to_ruby(ruby, e))?;
    testing::run(
        &job,
        || call.funcall("call", ()),
        |value| {
            convert::value(ruby, *value)
                .to_json("result")
                .map_err(|e| to_ruby(ruby, e))
        },
        |error| match error.value() {
            Some(exception) => crate::errors::describe_parts(exception),
            None => ("(unknown error)".to_string(), String::new()),
        },
    )
}

/// Forgets the recorded jobs of `class_name` (everything: nil).
pub fn clear(class_name: Option<String>) {
    testing::clear(class_name.as_deref());
}

/// `result(jid)` in a testing mode, as `Client#result` shapes it.
pub fn result(ruby: &Ruby, jid: String) -> (&'static str, Value) {
    outcome(ruby, testing::result(&jid))
}

/// Raises the core's error for a job of a class no handler is registered
/// for (`InvalidArgument` on field `class`).
pub fn unknown_class(ruby: &Ruby, class_name: String) -> Result<(), Error> {
    Err(to_ruby(ruby, testing::unknown_class(&class_name)))
}

/// `status(jid)` in a testing mode.
pub fn status(jid: String) -> String {
    testing::status(&jid)
}

/// `["succeeded", value]`, `["failed", record]` or `["pending", status]`.
pub fn outcome(ruby: &Ruby, outcome: JobOutcome) -> (&'static str, Value) {
    match outcome {
        JobOutcome::Succeeded(value) => ("succeeded", convert::from_json(ruby, &value)),
        JobOutcome::Failed(record) => ("failed", convert::from_json(ruby, &record)),
        JobOutcome::Pending(status) => ("pending", ruby.str_new(&status).as_value()),
    }
}
