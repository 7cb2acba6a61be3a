//! The one error type of the core. Each variant maps to its own exception
//! class in the Python and Ruby bindings (one mapping file each), which also
//! carry [`Error::field`] and [`Error::value`] as attributes.

/// Everything that can go wrong in cogworker, by kind.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting has an invalid value. Names the setting and the value.
    #[error("invalid config {field} = {value}: {reason}")]
    Config {
        /// The setting (`concurrency`, `queues`, ...).
        field: &'static str,
        /// The value given, as the user wrote it near enough.
        value: String,
        /// What it must be instead.
        reason: String,
    },

    /// A job to push is malformed. Names the field; nothing was written.
    #[error("invalid job: {field}{}: {reason}", shown(.value))]
    InvalidJob {
        /// The field (`queue`, `args[2]`, `jobs[3].at`, ...).
        field: String,
        /// The offending value, where there is one to show.
        value: Option<String>,
        /// What is wrong with it.
        reason: String,
    },

    /// An argument of a call is not what the call takes (an ops-API call's
    /// parameter; in Ruby, a job argument that is not a JSON type).
    #[error("invalid argument {field} = {value}: {reason}")]
    InvalidArgument {
        /// The parameter (`set`, `args[1]`, ...).
        field: String,
        /// The value given.
        value: String,
        /// What it must be instead.
        reason: String,
    },

    /// Talking to Redis failed (connection, timeout, command error).
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),

    /// A host's client or ops API could not talk to the Redis it names
    /// (its URL without credentials): the same failure as `Redis`, saying
    /// which server.
    #[error("redis at {target}: {source}")]
    RedisAt {
        /// Where the client points (no credentials).
        target: String,
        /// What failed.
        source: redis::RedisError,
    },

    /// A rate limiter had no capacity to give within the wait allowed.
    #[error("over limit: {limiter} ({reason})")]
    OverLimit {
        /// The limiter's name.
        limiter: String,
        /// Its kind and numbers, and how long was waited.
        reason: String,
    },

    /// A push reached the master, but fewer replicas than
    /// `min_replicas_acked` confirmed it within `replica_ack_timeout`: the
    /// job is queued, and a failover before the replicas catch up may lose
    /// it (a retry of the push may run it twice).
    #[error("the push reached the master, but {acked} of the {wanted} replica(s) it needs (min_replicas_acked) confirmed it within {waited_ms} ms: the job is queued, and may be lost if the master fails before they catch up")]
    NotReplicated {
        /// Replicas that confirmed it.
        acked: u32,
        /// Replicas it needed.
        wanted: u32,
        /// How long it waited, in milliseconds.
        waited_ms: u64,
    },

    /// A Lua script returned something other than its header promises.
    #[error("script {script}: {reason}")]
    Script {
        /// The script's file name, without `.lua`.
        script: &'static str,
        /// What it returned.
        reason: String,
    },
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
            value: None,
            reason: reason.to_string(),
        }
    }

    pub(crate) fn invalid_value(field: impl ToString, value: impl ToString, reason: impl ToString) -> Self {
        Error::InvalidJob {
            field: field.to_string(),
            value: Some(value.to_string()),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn invalid_argument(field: impl ToString, value: impl ToString, reason: impl ToString) -> Self {
        Error::InvalidArgument {
            field: field.to_string(),
            value: value.to_string(),
            reason: reason.to_string(),
        }
    }

    /// This error with an invalid job's field put under `prefix`
    /// (`jobs[3]` + `queue` = `jobs[3].queue`): which job of several it
    /// was. Other kinds unchanged.
    pub(crate) fn within(self, prefix: &str) -> Self {
        match self {
            Error::InvalidJob { field, value, reason } => Error::InvalidJob {
                field: format!("{prefix}.{field}"),
                value,
                reason,
            },
            other => other,
        }
    }

    /// A push past its group's backlog cap (`group_backlog`), refused.
    pub(crate) fn backlog_full(waiting: impl std::fmt::Display, most: impl std::fmt::Display, group: &str) -> Self {
        Error::OverLimit {
            limiter: format!("the backlog of group {group}"),
            reason: format!("{waiting} of its jobs wait already, at most {most} (group_backlog)"),
        }
    }

    /// A push or batch script's refusal (its code, then the batch id or
    /// the deepest nesting it names, or a group's backlog: waiting, cap,
    /// group; scripts/batch_open.lua, push.lua, group.lua) as the error it
    /// means; any other Redis error as it is.
    pub(crate) fn from_batch_script(error: redis::RedisError) -> Self {
        let named = error.detail().unwrap_or_default().trim().to_string();
        match error.code() {
            Some("BACKLOG") => {
                let mut parts = named.splitn(3, ' ');
                let (waiting, most, group) = (
                    parts.next().unwrap_or(""),
                    parts.next().unwrap_or(""),
                    parts.next().unwrap_or(""),
                );
                Error::backlog_full(waiting, most, group)
            }
            Some("NOBATCH") => Error::invalid_argument("bid", named, "no such batch (never opened, or expired)"),
            Some("BATCHEXISTS") => Error::invalid_argument("bid", named, "a batch with this id exists already"),
            Some("BATCHDEPTH") => {
                Error::invalid_argument("parent", "(a batch)", format!("batches nest at most {named} deep"))
            }
            _ => Error::Redis(error),
        }
    }

    /// This error, a Redis failure naming `target` (other kinds unchanged).
    pub fn at_redis(self, target: &str) -> Self {
        match self {
            Error::Redis(source) => Error::RedisAt {
                target: target.to_string(),
                source,
            },
            other => other,
        }
    }

    /// The setting or job field the error is about, if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::Config { field, .. } => Some(field),
            Error::InvalidJob { field, .. } | Error::InvalidArgument { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The offending value, if the error is about one.
    pub fn value(&self) -> Option<&str> {
        match self {
            Error::Config { value, .. } => Some(value),
            Error::InvalidJob { value, .. } => value.as_deref(),
            Error::InvalidArgument { value, .. } => Some(value),
            _ => None,
        }
    }
}

fn shown(value: &Option<String>) -> String {
    value.as_deref().map(|v| format!(" = {v}")).unwrap_or_default()
}

/// The core's `Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
