//! `Cogworker::Native::Config`: settings handed to the core's settings
//! table, which validates each (ConfigError names it and the value).

use crate::convert;
use crate::errors::to_ruby;
use cogworker::Config;
use magnus::{Error, RHash, Ruby, Value};
use std::sync::Mutex;

#[magnus::wrap(class = "Cogworker::Native::Config", free_immediately, size)]
pub struct RbConfig {
    pub inner: Mutex<Config>,
}

impl RbConfig {
    /// Defaults (`redis_url` from COGWORKER_REDIS_URL / REDIS_URL), then each
    /// setting of `settings` (nil values skipped).
    pub fn new(ruby: &Ruby, settings: RHash) -> Result<Self, Error> {
        let mut config = Config::from_env().map_err(|e| to_ruby(ruby, e))?;
        convert::each_option(ruby, settings, |name, value| config.set(name, &value).map(drop))?;
        config.validate().map_err(|e| to_ruby(ruby, e))?;
        Ok(RbConfig {
            inner: Mutex::new(config),
        })
    }

    pub fn config(&self) -> Config {
        self.inner.lock().unwrap().clone()
    }

    /// Sets one setting.
    pub fn set(ruby: &Ruby, rb_self: &Self, name: String, value: Value) -> Result<(), Error> {
        let value = convert::option(ruby, value);
        let mut config = rb_self.inner.lock().unwrap();
        config.set(&name, &value).map(drop).map_err(|e| to_ruby(ruby, e))
    }

    /// A setting's current value (a password in redis_url masked).
    pub fn get(ruby: &Ruby, rb_self: &Self, name: String) -> Result<Value, Error> {
        let value = rb_self.inner.lock().unwrap().get(&name).and_then(|v| v.to_json(&name));
        Ok(convert::from_json(ruby, &value.map_err(|e| to_ruby(ruby, e))?))
    }
}

/// `[name, help]` of every setting.
pub fn settings() -> Vec<(&'static str, &'static str)> {
    cogworker::SETTINGS.iter().map(|s| (s.name, s.help)).collect()
}

/// `[long, short, setting, kind, help]` of every worker flag (kind: text,
/// whole, seconds, boolean or repeated).
pub fn worker_flags() -> Vec<(String, Option<&'static str>, &'static str, &'static str, &'static str)> {
    cogworker::host::flags::worker_flags()
        .into_iter()
        .map(|f| (f.long, f.short, f.setting, f.value.name(), f.help))
        .collect()
}

/// The settings `[setting, [text, ...]]` pairs of flags give.
pub fn settings_from_flags(ruby: &Ruby, given: Vec<(String, Vec<String>)>) -> Result<RHash, Error> {
    let settings = cogworker::host::flags::settings_from_flags(&given).map_err(|e| to_ruby(ruby, e))?;
    let hash = ruby.hash_new();
    for (name, value) in settings {
        let json = value.to_json(&name).map_err(|e| to_ruby(ruby, e))?;
        hash.aset(ruby.str_new(&name), convert::from_json(ruby, &json))?;
    }
    Ok(hash)
}

/// `[long, metavar or nil (a switch), help]` of each flag of `command`
/// (web, metrics or an admin command).
pub fn command_flags(command: String) -> Vec<(&'static str, Option<&'static str>, String)> {
    cogworker::host::command_flags(&command)
        .into_iter()
        .map(|f| (f.long, f.metavar, f.help))
        .collect()
}

/// `[redis_url, namespace]` the flags `given` to `command` say (nil: the
/// configuration's); a secret among them is warned of.
pub fn command_connection(
    ruby: &Ruby,
    command: String,
    given: Vec<(String, Vec<String>)>,
) -> Result<(Option<String>, Option<String>), Error> {
    cogworker::host::command_connection(&command, &given).map_err(|e| to_ruby(ruby, e))
}
