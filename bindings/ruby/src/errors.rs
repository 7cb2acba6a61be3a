//! One Ruby exception class per core error kind, declared in Ruby
//! (`lib/cogworker/errors.rb`) and raised from here with `field` and `value`
//! set: the only mapping.

use magnus::{exception::ExceptionClass, prelude::*, Error, RModule, RString, Ruby};

pub fn class(ruby: &Ruby, name: &str) -> ExceptionClass {
    ruby.class_object()
        .const_get::<_, RModule>("Cogworker")
        .and_then(|m| m.const_get::<_, ExceptionClass>(name))
        .unwrap_or_else(|_| ruby.exception_runtime_error())
}

/// A `Cogworker::<name>` exception with `message`.
pub fn raise(ruby: &Ruby, name: &str, message: impl Into<String>) -> Error {
    Error::new(class(ruby, name), message.into())
}

pub fn to_ruby(ruby: &Ruby, error: cogworker::Error) -> Error {
    let name = match &error {
        cogworker::Error::Config { .. } => "ConfigError",
        cogworker::Error::InvalidJob { .. } => "InvalidJob",
        cogworker::Error::InvalidArgument { .. } => "InvalidArgument",
        cogworker::Error::Redis(_) | cogworker::Error::RedisAt { .. } => "RedisError",
        cogworker::Error::Script { .. } => "ScriptError",
        cogworker::Error::OverLimit { .. } => "OverLimit",
        cogworker::Error::NotReplicated { .. } => "NotReplicated",
    };
    let class = class(ruby, name);
    let built = class.new_instance((error.to_string(),)).and_then(|exception| {
        let _: magnus::Value = exception.funcall("instance_variable_set", ("@field", error.field()))?;
        let _: magnus::Value = exception.funcall("instance_variable_set", ("@value", error.value()))?;
        Ok(Error::from(exception))
    });
    built.unwrap_or_else(|e| e)
}

/// What an exception says, as a log line names it: `Class: message`.
pub fn describe(exception: magnus::Value) -> String {
    let (class, message) = describe_parts(exception);
    format!("{class}: {message}")
}

/// `(Class, message)` of an exception, either part replaced when reading
/// it raises.
pub fn describe_parts(exception: magnus::Value) -> (String, String) {
    let class = exception
        .funcall::<_, _, magnus::Value>("class", ())
        .and_then(|class| class.funcall::<_, _, String>("name", ()))
        .unwrap_or_else(|_| "(unknown error)".to_string());
    let message = exception
        .funcall::<_, _, RString>("message", ())
        .and_then(|message| message.funcall::<_, _, String>("scrub", ()))
        .unwrap_or_else(|_| "(the message could not be read)".to_string());
    (class, message)
}
