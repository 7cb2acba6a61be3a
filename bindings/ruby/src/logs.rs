//! The engine's log lines handed to `Cogworker.logger` for a worker
//! embedded in an application (see `cogworker::host::logs` in the core).

use crate::blocking;
use magnus::{prelude::*, Error, Ruby, Value};

/// Sends the engine's log lines to Ruby (drained by `run_log_forwarding`)
/// unless this process chose a format already (the CLI's): true if so.
pub fn init_log_forwarding() -> bool {
    cogworker::host::init_log_forwarding()
}

/// Runs this thread as the log thread until `stop_log_forwarding`:
/// `emit.call(level, target, thread, message, fields)` for each line (what
/// it raises is its own to rescue; a killed thread ends the loop).
pub fn run_log_forwarding(ruby: &Ruby, emit: Value) -> Result<(), Error> {
    cogworker::host::run_log_forwarding(&mut blocking::Blocking(ruby), |line| {
        let fields = ruby.hash_new();
        for (name, value) in &line.fields {
            fields.aset(name.as_str(), value.as_str())?;
        }
        let args = (line.level, line.target, line.thread, line.message, fields);
        match emit.funcall::<_, _, Value>("call", args) {
            Err(error) if crate::worker::exception(&error).is_none() => Err(error),
            _ => Ok(()),
        }
    })
}

/// Ends `run_log_forwarding` once the lines queued are emitted.
pub fn stop_log_forwarding() {
    cogworker::host::stop_log_forwarding();
}
