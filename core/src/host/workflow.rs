//! The parts a host builds batches and workflows from, shaped here once: a
//! batch callback (a job and the event that pushes it), a workflow step (a
//! job, perhaps taking the step before's result), a group of steps, and the
//! chain and chord shapes with their descriptions. Each returns the value
//! the ops API's `open_batch` and `push_workflow` take (their documented
//! shape), so a host never writes a key of it, and a part that cannot be
//! is refused as it is made, naming its field, not at the push.

use crate::batch::{BatchEvent, EVENT};
use crate::error::{Error, Result};
use crate::host_value::HostValue;
use crate::job::Job;
use crate::workflow::{group_member, CHAIN_DESCRIPTION, CHORD_DESCRIPTION, DEFAULT_DESCRIPTION, GROUP, TAKES_RESULT};
use serde_json::{Map, Value};

/// A callback of a batch: `job` (prepared as a push prepares it) pushed
/// when `event` (`complete`, `success` or `death`) happens. Refused once
/// the batch is `opened`: its callbacks were written when it was.
pub fn callback(event: &str, job: Job, opened: bool) -> Result<Value> {
    if opened {
        return Err(Error::invalid_argument(
            "callbacks",
            event,
            "callbacks can be added before the batch is opened only",
        ));
    }
    let event = BatchEvent::parse(event)?;
    let mut value = job.into_value();
    value[EVENT] = Value::from(event.as_str());
    Ok(value)
}

/// The jids of `callbacks` (as [`callback`] made them) pushed on `event`.
pub fn callback_jids(callbacks: &[Value], event: &str) -> Vec<String> {
    callbacks
        .iter()
        .filter(|callback| callback[EVENT] == event)
        .filter_map(|callback| callback["jid"].as_str().map(str::to_string))
        .collect()
}

/// A step of one job; `takes_result`: the step before's result goes first
/// in its args (a list after a group).
pub fn step(job: Job, takes_result: bool) -> Value {
    let mut value = job.into_value();
    if takes_result {
        value[TAKES_RESULT] = Value::Bool(true);
    }
    value
}

/// `steps` (each made by [`step`], one job) run side by side as one step;
/// `takes_result` as [`step`]'s, for each of them.
pub fn group(steps: &[Value], takes_result: bool) -> Result<Value> {
    let mut members = Vec::with_capacity(steps.len());
    for (index, member) in steps.iter().enumerate() {
        members.push(Value::Object(group_member(member, &format!("{GROUP}[{index}]"))?));
    }
    let mut value = Map::new();
    value.insert(GROUP.into(), Value::Array(members));
    value.insert(TAKES_RESULT.into(), Value::Bool(takes_result));
    Ok(Value::Object(value))
}

/// The steps and description of a workflow of `shape`: `workflow` (the
/// steps as given), `chain` (the same, described as one), or `chord`
/// (`steps` as a group, then `callback` taking their results). No
/// `description`: the shape's.
pub fn shaped(
    shape: &str,
    steps: &[Value],
    callback: Option<&Value>,
    description: Option<&str>,
) -> Result<(Vec<Value>, String)> {
    let (steps, default) = match (shape, callback) {
        ("workflow", None) => (steps.to_vec(), DEFAULT_DESCRIPTION),
        ("chain", None) => (steps.to_vec(), CHAIN_DESCRIPTION),
        ("chord", Some(callback)) => {
            let mut callback = callback.clone();
            if !callback.is_object() {
                return Err(Error::invalid_argument("callback", &callback, "must be a step"));
            }
            callback[TAKES_RESULT] = Value::Bool(true);
            (vec![group(steps, false)?, callback], CHORD_DESCRIPTION)
        }
        ("chord", None) => return Err(Error::invalid_argument("callback", "nothing", "a chord needs one")),
        ("workflow" | "chain", Some(_)) => {
            return Err(Error::invalid_argument("callback", shape, "only a chord has one"));
        }
        _ => {
            return Err(Error::invalid_argument(
                "shape",
                shape,
                "must be workflow, chain or chord",
            ))
        }
    };
    Ok((steps, description.unwrap_or(default).to_string()))
}

/// [`group`] of a host's list of steps.
pub fn group_of(steps: &HostValue, takes_result: bool) -> Result<Value> {
    group(&listed(steps, "steps")?, takes_result)
}

/// [`shaped`] from a host's values.
pub fn shaped_of(
    shape: &str,
    steps: &HostValue,
    callback: Option<&HostValue>,
    description: Option<&str>,
) -> Result<(Vec<Value>, String)> {
    let callback = callback.map(|callback| callback.to_json("callback")).transpose()?;
    shaped(shape, &listed(steps, "steps")?, callback.as_ref(), description)
}

/// [`callback_jids`] of a host's list of callbacks.
pub fn callback_jids_of(callbacks: &HostValue, event: &str) -> Result<Vec<String>> {
    Ok(callback_jids(&listed(callbacks, "callbacks")?, event))
}

fn listed(items: &HostValue, field: &str) -> Result<Vec<Value>> {
    match items.to_json(field)? {
        Value::Array(items) => Ok(items),
        other => Err(Error::invalid_argument(field, other, "must be a list")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(class: &str) -> Job {
        Job::new(class).args(vec![json!(1)])
    }

    #[test]
    fn a_callback_carries_its_event_and_is_refused_for_an_unknown_one_or_an_opened_batch() {
        let made = callback("success", job("Done").jid("abc"), false).unwrap();
        assert_eq!(
            (made["class"].clone(), made["event"].clone()),
            (json!("Done"), json!("success"))
        );
        assert_eq!(
            callback_jids(std::slice::from_ref(&made), "success"),
            vec!["abc".to_string()]
        );
        assert!(callback_jids(&[made], "death").is_empty());
        let unknown = callback("finish", job("Done"), false).unwrap_err().to_string();
        assert!(unknown.contains("event = finish"), "{unknown}");
        let late = callback("success", job("Done"), true).unwrap_err().to_string();
        assert!(late.contains("before the batch is opened"), "{late}");
    }

    #[test]
    fn a_group_refuses_a_member_that_takes_a_result_or_is_a_group() {
        let taking = step(job("A"), true);
        let refused = group(&[taking], false).unwrap_err().to_string();
        assert!(refused.contains("group[0].takes_result"), "{refused}");
        let inner = group(&[step(job("A"), false)], false).unwrap();
        assert!(group(&[inner], true).unwrap_err().to_string().contains("group[0]"));
        let made = group(&[step(job("A"), false), step(job("B"), false)], true).unwrap();
        assert_eq!(made["takes_result"], json!(true));
        assert_eq!(made["group"][1]["class"], json!("B"));
    }

    #[test]
    fn each_shape_has_its_description_and_a_chords_callback_takes_the_results() {
        let steps = [step(job("A"), false), step(job("B"), false)];
        assert_eq!(shaped("workflow", &steps, None, None).unwrap().1, "workflow");
        assert_eq!(shaped("chain", &steps, None, None).unwrap().1, "chain");
        assert_eq!(shaped("chain", &steps, None, Some("mine")).unwrap().1, "mine");
        let (chord, description) = shaped("chord", &steps, Some(&step(job("C"), false)), None).unwrap();
        assert_eq!(description, "chord");
        assert_eq!(chord[0]["group"].as_array().map(Vec::len), Some(2));
        assert_eq!(chord[1]["takes_result"], json!(true));
        assert!(shaped("tree", &steps, None, None).is_err());
        assert!(shaped("chord", &steps, None, None).is_err());
    }
}
