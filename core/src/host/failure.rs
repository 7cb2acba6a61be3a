//! A failure as a host language reports it: raw pieces, any of which may
//! be missing (an exception whose `__str__` or `#message` raised) or wrong
//! (a retry hook that returned a string). The core makes the stored strings
//! safe and falls back to the default backoff, so recording a failure
//! cannot fail.

use super::HostValue;
use crate::delivery::Delivery;
use crate::handler::Failure;

/// What a host's retry hook (`retry_in`, `cogworker_retry_in`) returned.
#[derive(Clone, Debug, PartialEq)]
pub enum RetryHint {
    /// No hook, or it returned nothing: the default backoff.
    Default,
    /// Seconds until the retry.
    Seconds(f64),
    /// Something that is not a number of seconds; described for the
    /// log, then the default backoff is used.
    Invalid(String),
    /// The hook raised (the exception as the host shows it); logged, then
    /// the default backoff is used.
    Raised(String),
}

impl RetryHint {
    /// The seconds it gives, if it gives a usable number; anything else is
    /// logged (naming `whose`) and means the default backoff.
    pub fn seconds(self, whose: &dyn std::fmt::Display) -> Option<f64> {
        match self {
            RetryHint::Default => None,
            RetryHint::Seconds(seconds) if seconds.is_finite() && seconds >= 0.0 => Some(seconds),
            RetryHint::Seconds(seconds) => {
                tracing::warn!("the retry hook of {whose} gave {seconds} seconds; using the default backoff");
                None
            }
            RetryHint::Invalid(what) => {
                tracing::warn!(
                    "the retry hook of {whose} gave {what}, not a number of seconds; using the default backoff"
                );
                None
            }
            RetryHint::Raised(what) => {
                tracing::warn!("the retry hook of {whose} raised {what}; using the default backoff");
                None
            }
        }
    }
}

impl From<HostValue> for RetryHint {
    /// Nothing: the default; a number or a length of time (`timedelta`,
    /// `ActiveSupport::Duration`): seconds; anything else: invalid.
    fn from(value: HostValue) -> Self {
        match value {
            HostValue::Null => RetryHint::Default,
            HostValue::Int(n) => RetryHint::Seconds(n as f64),
            HostValue::Float(x) => RetryHint::Seconds(x),
            HostValue::Duration { seconds, .. } => RetryHint::Seconds(seconds),
            other => RetryHint::Invalid(other.to_string()),
        }
    }
}

/// A handler failure in the host's own terms.
#[derive(Clone, Debug, Default)]
pub struct HostFailure {
    /// The exception's class name (`module.Class`, `Module::Class`).
    pub class: Option<String>,
    /// Its message; `None` when reading it raised.
    pub message: Option<String>,
    /// Backtrace lines, innermost last or first as the host prints them.
    pub backtrace: Vec<String>,
    /// What the retry hook said.
    pub retry: Option<RetryHint>,
}

/// Stored when the exception's message could not be read.
const NO_MESSAGE: &str = "(the exception's message could not be read: it raised while being converted)";

impl HostFailure {
    /// From the host's values as they are: the class name, the message and
    /// the backtrace lines as text (anything else counts as unreadable), and
    /// what the retry hook said.
    pub fn from_values(class: HostValue, message: HostValue, backtrace: HostValue, retry: RetryHint) -> Self {
        let text = |value: HostValue| match value {
            HostValue::Text(text) | HostValue::InvalidText(text) => Some(text),
            _ => None,
        };
        let lines = match backtrace {
            HostValue::List(lines) => lines.into_iter().filter_map(text).collect(),
            _ => Vec::new(),
        };
        HostFailure {
            class: text(class),
            message: text(message),
            backtrace: lines,
            retry: Some(retry),
        }
    }

    /// The core's failure record for `delivery`'s job.
    pub(crate) fn into_failure(self, delivery: &Delivery) -> Failure {
        let class = self
            .class
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "(unknown error)".into());
        let message = self.message.unwrap_or_else(|| NO_MESSAGE.to_string());
        let mut failure = Failure::new(class, message).with_backtrace(self.backtrace);
        failure.retry_in = self.retry.unwrap_or(RetryHint::Default).seconds(&delivery.job());
        failure
    }
}

impl Delivery {
    /// The job failed, as a host language reports it (see [`HostFailure`]).
    pub fn fail_from_host(self, failure: HostFailure) {
        let failure = failure.into_failure(&self);
        self.fail(failure);
    }
}
