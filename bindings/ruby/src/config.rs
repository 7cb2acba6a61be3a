//! Settings from a Ruby Hash (`Cogworker.configure`): every setting of
//! docs/configuration.md, validated by the core's setters; errors name the setting and value.

use crate::errors::{raise, to_ruby};
use cogworker::{CatchUp, Config, FetchMode};
use magnus::{prelude::*, Error, RHash, Ruby, TryConvert, Value};

fn bad(ruby: &Ruby, field: &str, value: Value, expected: &str) -> Error {
    let shown = value.inspect();
    raise(
        ruby,
        "ConfigError",
        format!("invalid config {field} = {shown}: {expected}"),
    )
}

fn get<T: TryConvert>(ruby: &Ruby, field: &str, value: Value, expected: &str) -> Result<T, Error> {
    T::try_convert(value).map_err(|_| bad(ruby, field, value, expected))
}

/// A string or a list of strings (`lib/cogworker/config.rb` turns symbols
/// and `[name, weight]` pairs into strings first).
fn strings(ruby: &Ruby, field: &str, value: Value) -> Result<Vec<String>, Error> {
    if let Ok(one) = String::try_convert(value) {
        return Ok(vec![one]);
    }
    get(
        ruby,
        field,
        value,
        "must be a list of strings like \"name\" or \"name,weight\"",
    )
}

fn number(ruby: &Ruby, field: &str, value: Value) -> Result<f64, Error> {
    if value.is_kind_of(ruby.class_numeric()) {
        get(ruby, field, value, "must be a number of seconds")
    } else {
        Err(bad(ruby, field, value, "must be a number of seconds"))
    }
}

fn apply(ruby: &Ruby, config: &mut Config, field: &str, value: Value) -> Result<(), Error> {
    let text = |v: Value| -> Result<String, Error> {
        let v = if v.is_kind_of(ruby.class_symbol()) {
            v.funcall("to_s", ())?
        } else {
            v
        };
        get(ruby, field, v, "must be a string")
    };
    let result = match field {
        "redis_url" => config.set_redis_url(&text(value)?).map(drop),
        "namespace" => config.set_namespace(&text(value)?).map(drop),
        "concurrency" => {
            if !value.is_kind_of(ruby.class_integer()) {
                return Err(bad(ruby, field, value, "must be a whole number"));
            }
            config
                .set_concurrency(get(ruby, field, value, "must be a whole number")?)
                .map(drop)
        }
        "queues" => config.set_queues(&strings(ruby, field, value)?).map(drop),
        "strict_queues" => config.set_queues_strict(&strings(ruby, field, value)?).map(drop),
        "fetch" => text(value)?.parse::<FetchMode>().map(|mode| {
            config.set_fetch(mode);
        }),
        "periodic_catch_up" => text(value)?.parse::<CatchUp>().map(|mode| {
            config.set_periodic_catch_up(mode);
        }),
        "labels" => {
            config.set_labels(&strings(ruby, field, value)?);
            Ok(())
        }
        "fetch_idle_max_interval" => config
            .set_fetch_idle_max_interval(number(ruby, field, value)?)
            .map(drop),
        "orphan_threshold" => config.set_orphan_threshold(number(ruby, field, value)?).map(drop),
        "orphan_check_interval" => config.set_orphan_check_interval(number(ruby, field, value)?).map(drop),
        "shutdown_timeout" => config.set_shutdown_timeout(number(ruby, field, value)?).map(drop),
        "unique_lock_ttl" => config.set_unique_lock_ttl(number(ruby, field, value)?).map(drop),
        "heartbeat_interval" => config.set_heartbeat_interval(number(ruby, field, value)?).map(drop),
        "scheduler_poll_interval" => config
            .set_scheduler_poll_interval(number(ruby, field, value)?)
            .map(drop),
        other => return Err(raise(ruby, "ConfigError", format!("unknown config setting {other:?}"))),
    };
    result.map_err(|e| to_ruby(ruby, e))
}

/// Defaults (redis_url from COGWORKER_REDIS_URL / REDIS_URL), then each
/// setting of `settings` (nil values skipped).
pub fn from_hash(ruby: &Ruby, settings: RHash) -> Result<Config, Error> {
    let mut config = Config::from_env().map_err(|e| to_ruby(ruby, e))?;
    // Applied inside the iteration: Ruby values must not be kept on the Rust heap.
    settings.foreach(|key: Value, value: Value| {
        let key: String = key.funcall("to_s", ())?;
        if !value.is_nil() {
            apply(ruby, &mut config, &key, value)?;
        }
        Ok(magnus::r_hash::ForEach::Continue)
    })?;
    Ok(config)
}

/// `Cogworker::Native.check_config(hash)`: raises ConfigError or returns nil.
pub fn check(ruby: &Ruby, settings: RHash) -> Result<(), Error> {
    from_hash(ruby, settings).map(drop)
}
