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

/// Classes with recorded jobs.
pub fn classes() -> Vec<String> {
    testing::classes()
}

/// Takes the oldest recorded job of `class_name`, or nil.
pub fn take(ruby: &Ruby, class_name: String) -> Value {
    testing::take_oldest(&class_name).map_or_else(|| ruby.qnil().as_value(), |job| convert::from_json(ruby, &job))
}

/// Forgets the recorded jobs of `class_name` (everything: nil).
pub fn clear(class_name: Option<String>) {
    testing::clear(class_name.as_deref());
}

/// A job run in a testing mode returned `value`, or raised (`error_class`
/// and `error_message` given).
pub fn settled(
    ruby: &Ruby,
    job: Value,
    value: Value,
    error_class: Option<String>,
    error_message: Option<String>,
) -> Result<(), Error> {
    let job = convert::value(ruby, job).to_json("job").map_err(|e| to_ruby(ruby, e))?;
    let outcome = match error_class {
        Some(class) => Err((class, error_message.unwrap_or_default())),
        None => Ok(convert::value(ruby, value)
            .to_json("result")
            .map_err(|e| to_ruby(ruby, e))?),
    };
    testing::settled(&job, outcome);
    Ok(())
}

/// `result(jid)` in a testing mode, as `Client#result` shapes it.
pub fn result(ruby: &Ruby, jid: String) -> (&'static str, Value) {
    outcome(ruby, testing::result(&jid))
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
