//! One Ruby exception class per core error kind, declared in Ruby
//! (`lib/cogworker/errors.rb`) and raised from here: the only mapping.

use magnus::{exception::ExceptionClass, prelude::*, Error, RModule, Ruby};

fn class(ruby: &Ruby, name: &str) -> ExceptionClass {
    ruby.class_object()
        .const_get::<_, RModule>("Cogworker")
        .and_then(|m| m.const_get::<_, ExceptionClass>(name))
        .unwrap_or_else(|_| ruby.exception_runtime_error())
}

pub fn raise(ruby: &Ruby, name: &str, message: impl Into<String>) -> Error {
    Error::new(class(ruby, name), message.into())
}

pub fn to_ruby(ruby: &Ruby, error: cogworker::Error) -> Error {
    let name = match &error {
        cogworker::Error::Config { .. } => "ConfigError",
        cogworker::Error::InvalidJob { .. } => "InvalidJob",
        cogworker::Error::Redis(_) => "RedisError",
        cogworker::Error::Script { .. } => "ScriptError",
        cogworker::Error::ShuttingDown => "ShuttingDown",
        cogworker::Error::Handler { .. } => "HandlerError",
    };
    raise(ruby, name, error.to_string())
}
