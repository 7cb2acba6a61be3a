//! One Python exception class per core error kind (the only mapping).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(cogworker, Error, PyException, "Base class of every cogworker error.");
create_exception!(cogworker, ConfigError, Error, "A setting has an invalid value.");
create_exception!(
    cogworker,
    InvalidJob,
    Error,
    "A job to push is malformed; nothing was written."
);
create_exception!(cogworker, RedisError, Error, "Talking to Redis failed.");
create_exception!(cogworker, ScriptError, Error, "A cogworker Lua script misbehaved.");
create_exception!(cogworker, ShuttingDown, Error, "The worker is shutting down.");
create_exception!(cogworker, HandlerError, Error, "A handler failed.");

pub fn to_py(error: cogworker::Error) -> PyErr {
    let message = error.to_string();
    match error {
        cogworker::Error::Config { .. } => ConfigError::new_err(message),
        cogworker::Error::InvalidJob { .. } => InvalidJob::new_err(message),
        cogworker::Error::Redis(_) => RedisError::new_err(message),
        cogworker::Error::Script { .. } => ScriptError::new_err(message),
        cogworker::Error::ShuttingDown => ShuttingDown::new_err(message),
        cogworker::Error::Handler { .. } => HandlerError::new_err(message),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("InvalidJob", py.get_type::<InvalidJob>())?;
    m.add("RedisError", py.get_type::<RedisError>())?;
    m.add("ScriptError", py.get_type::<ScriptError>())?;
    m.add("ShuttingDown", py.get_type::<ShuttingDown>())?;
    m.add("HandlerError", py.get_type::<HandlerError>())?;
    Ok(())
}
