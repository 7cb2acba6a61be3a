//! Batch callbacks and workflow parts, made by the core
//! (`cogworker::host::workflow`): Ruby values in, Hashes and Arrays out.

use crate::client::request;
use crate::convert;
use crate::errors::to_ruby;
use cogworker::host::{prepared, workflow};
use magnus::{Error, RArray, RHash, Ruby, Value};

/// A batch's callback: `class_name` with `args` and push `options`, pushed
/// on `event`; refused once the batch is `opened`.
pub fn batch_callback(
    ruby: &Ruby,
    event: String,
    class_name: String,
    args: RArray,
    opened: bool,
    options: RHash,
) -> Result<Value, Error> {
    let job = prepared(request(ruby, class_name, args, options)?).map_err(|e| to_ruby(ruby, e))?;
    let callback = workflow::callback(&event, job, opened).map_err(|e| to_ruby(ruby, e))?;
    Ok(convert::from_json(ruby, &callback))
}

/// The jids of `callbacks` pushed on `event`.
pub fn callback_jids(ruby: &Ruby, callbacks: Value, event: String) -> Result<Vec<String>, Error> {
    workflow::callback_jids_of(&convert::value(ruby, callbacks), &event).map_err(|e| to_ruby(ruby, e))
}

/// A workflow step of one job: `class_name` with `args` and push `options`.
pub fn workflow_step(
    ruby: &Ruby,
    class_name: String,
    args: RArray,
    takes_result: bool,
    options: RHash,
) -> Result<Value, Error> {
    let job = prepared(request(ruby, class_name, args, options)?).map_err(|e| to_ruby(ruby, e))?;
    Ok(convert::from_json(ruby, &workflow::step(job, takes_result)))
}

/// `steps` run side by side as one step.
pub fn workflow_group(ruby: &Ruby, steps: Value, takes_result: bool) -> Result<Value, Error> {
    let group = workflow::group_of(&convert::value(ruby, steps), takes_result).map_err(|e| to_ruby(ruby, e))?;
    Ok(convert::from_json(ruby, &group))
}

/// `[steps, description]` of a workflow of `shape` (workflow, chain, chord).
pub fn workflow_shaped(
    ruby: &Ruby,
    shape: String,
    steps: Value,
    callback: Option<Value>,
    description: Option<String>,
) -> Result<(Value, String), Error> {
    let callback = callback.map(|callback| convert::value(ruby, callback));
    let (steps, description) = workflow::shaped_of(
        &shape,
        &convert::value(ruby, steps),
        callback.as_ref(),
        description.as_deref(),
    )
    .map_err(|e| to_ruby(ruby, e))?;
    Ok((convert::array_from_json(ruby, &steps), description))
}
