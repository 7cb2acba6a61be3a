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
    OverLimit(Error): "A rate limiter had no capacity to give within the wait allowed.";
    NotReplicated(RedisError): "A push reached the master, but fewer replicas than min_replicas_acked confirmed it in time: the job is queued, and may be lost if the master fails now.";
    JobTimeout(pyo3::exceptions::PyBaseException): "Raised in a job's thread when its time limit (`timeout`) passes. A BaseException, so that `except Exception` does not swallow it; however the handler ends, the job fails as cogworker::Timeout and is retried by its policy.";
}

pub fn to_py(error: cogworker::Error) -> PyErr {
    let message = error.to_string();
    let err = match &error {
        cogworker::Error::Config { .. } => ConfigError::new_err(message),
        cogworker::Error::InvalidJob { .. } => InvalidJob::new_err(message),
        cogworker::Error::InvalidArgument { .. } => InvalidArgument::new_err(message),
        cogworker::Error::Redis(_) | cogworker::Error::RedisAt { .. } => RedisError::new_err(message),
        cogworker::Error::Script { .. } => ScriptError::new_err(message),
        cogworker::Error::OverLimit { .. } => OverLimit::new_err(message),
        cogworker::Error::NotReplicated { .. } => NotReplicated::new_err(message),
    };
    Python::attach(|py| {
        let instance = err.value(py);
        let _ = instance.setattr("field", error.field());
        let _ = instance.setattr("value", error.value());
    });
    err
}

/// What `error` says, as a log line names it: `module.Class: message`.
pub fn describe(py: Python<'_>, error: &PyErr) -> String {
    let (class, message) = describe_parts(py, error);
    format!("{class}: {message}")
}

/// `(module.Class, message)` of `error`, either part replaced when
/// reading it raises (`module.` left out for builtins and `__main__`).
pub fn describe_parts(py: Python<'_>, error: &PyErr) -> (String, String) {
    let kind = error.get_type(py);
    let class = match (kind.module(), kind.qualname()) {
        (Ok(module), Ok(name)) if module != "builtins" && module != "__main__" => format!("{module}.{name}"),
        (_, Ok(name)) => name.to_string(),
        _ => "(unknown error)".to_string(),
    };
    let message = error
        .value(py)
        .str()
        .map(|text| text.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "(the message could not be read)".to_string());
    (class, message)
}
