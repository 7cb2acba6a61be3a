//! One Python exception class per core error kind (the only mapping); each
//! instance carries `field` and `value` (None where they do not apply).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

/// Declares the exception classes and `register`, which adds them to the module.
macro_rules! exceptions {
    ($($name:ident($base:ty): $doc:literal;)*) => {
        $(create_exception!(cogworker, $name, $base, $doc);)*

        pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add(stringify!($name), m.py().get_type::<$name>())?;)*
            Ok(())
        }
    };
}

exceptions! {
    Error(PyException): "Base class of every cogworker error.";
    ConfigError(Error): "A setting has an invalid value (`field`, `value`).";
    InvalidJob(Error): "A job to push is malformed (`field`, `value`); nothing was written.";
    InvalidArgument(InvalidJob): "An argument is invalid (`field`, `value`): a job argument JSON cannot hold, or an API call's.";
    RedisError(Error): "Talking to Redis failed.";
    ScriptError(Error): "A cogworker Lua script misbehaved.";
}

pub fn to_py(error: cogworker::Error) -> PyErr {
    let message = error.to_string();
    let err = match &error {
        cogworker::Error::Config { .. } => ConfigError::new_err(message),
        cogworker::Error::InvalidJob { .. } => InvalidJob::new_err(message),
        cogworker::Error::InvalidArgument { .. } => InvalidArgument::new_err(message),
        cogworker::Error::Redis(_) | cogworker::Error::RedisAt { .. } => RedisError::new_err(message),
        cogworker::Error::Script { .. } => ScriptError::new_err(message),
    };
    Python::attach(|py| {
        let instance = err.value(py);
        let _ = instance.setattr("field", error.field());
        let _ = instance.setattr("value", error.value());
    });
    err
}
