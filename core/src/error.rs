//! The one error type of the core. Each variant maps to its own exception
//! class in the Python and Ruby bindings, so keep variants few and distinct.

/// Everything that can go wrong in cogworker, by kind.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting has an invalid value. Names the setting and the value.
    #[error("invalid config {field} = {value}: {reason}")]
    Config {
        field: &'static str,
        value: String,
        reason: String,
    },

    /// A job to push is malformed. Names the field; nothing was written.
    #[error("invalid job: {field}: {reason}")]
    InvalidJob { field: String, reason: String },

    /// Talking to Redis failed (connection, timeout, command error).
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),

    /// A Lua script returned something other than its header promises.
    #[error("script {script}: {reason}")]
    Script { script: &'static str, reason: String },

    /// The worker is stopping or stopped; the call cannot be served.
    #[error("worker is shutting down")]
    ShuttingDown,

    /// A handler failed (used when a binding reports a failure by value).
    #[error("{class}: {message}")]
    Handler { class: String, message: String },
}

impl Error {
    pub(crate) fn config(field: &'static str, value: impl ToString, reason: impl ToString) -> Self {
        Error::Config {
            field,
            value: value.to_string(),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn invalid_job(field: impl ToString, reason: impl ToString) -> Self {
        Error::InvalidJob {
            field: field.to_string(),
            reason: reason.to_string(),
        }
    }

    /// The `class` of this error as stored in a job's `error_class`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Error::Config { .. } => "cogworker::ConfigError",
            Error::InvalidJob { .. } => "cogworker::InvalidJob",
            Error::Redis(_) => "cogworker::RedisError",
            Error::Script { .. } => "cogworker::ScriptError",
            Error::ShuttingDown => "cogworker::ShuttingDown",
            Error::Handler { .. } => "cogworker::HandlerError",
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
