//! One Python exception class per core error kind (the only mapping); each
//! instance carries `field` and `value` (None where they do not apply).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(cogworker, Error, PyException, "Base class of every cogworker error.");
create_exception!(
    cogworker,
    ConfigError,
    Error,
    "A setting has an invalid value (`field`, `value`)."
);
create_exception!(
    cogworker,
    InvalidJob,
    Error,
    "A job to push is malformed (`field`, `value`); nothing was written."
);
create_exception!(
    cogworker,
    InvalidArgument,
    InvalidJob,
    "An argument is invalid (`field`, `value`): a job argument JSON cannot hold, or an API call's."
);
create_exception!(cogworker, RedisError, Error, "Talking to Redis failed.");
create_exception!(cogworker, ScriptError, Error, "A cogworker Lua script misbehaved.");

pub fn to_py(error: cogworker::Error) -> PyErr {
    let message = error.to_string();
    let err = match &error {
        cogworker::Error::Config { .. } => ConfigError::new_err(message),
        cogworker::Error::InvalidJob { .. } => InvalidJob::new_err(message),
        cogworker::Error::InvalidArgument { .. } => InvalidArgument::new_err(message),
        cogworker::Error::Redis(_) => RedisError::new_err(message),
        cogworker::Error::Script { .. } => ScriptError::new_err(message),
    };
    Python::attach(|py| {
        let instance = err.value(py);
        let _ = instance.setattr("field", error.field());
        let _ = instance.setattr("value", error.value());
    });
    err
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("InvalidJob", py.get_type::<InvalidJob>())?;
    m.add("InvalidArgument", py.get_type::<InvalidArgument>())?;
    m.add("RedisError", py.get_type::<RedisError>())?;
    m.add("ScriptError", py.get_type::<ScriptError>())?;
    Ok(())
}
