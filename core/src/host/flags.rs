//! The worker command's flags, made from the settings table, so the Python
//! and Ruby CLIs accept every setting under the same name: `--redis-url`,
//! `--concurrency` (`-c`), `--queue` (`-q`, repeatable), `--label`
//! (repeatable), `--shutdown-timeout`, ... A host adds its own idioms
//! beside them (Python's module arguments, Ruby's `-r FILE`); what a flag's
//! text means is decided here.

use super::HostValue;
use crate::error::{Error, Result};
use crate::settings::SETTINGS;

/// How a flag's text becomes a setting's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagValue {
    /// Text as given (`--namespace app`).
    Text,
    /// A whole number (`-c 5`).
    Whole,
    /// Seconds, maybe with a fraction (`--shutdown-timeout 2.5`).
    Seconds,
    /// `true` or `false` (also yes/no, on/off, 1/0).
    Boolean,
    /// Repeatable: each use adds one item (`-q critical,3 -q default`).
    Repeated,
}

impl FlagValue {
    /// `text`, `whole`, `seconds`, `boolean` or `repeated`, as the hosts
    /// name it (and show it in `--help`).
    pub fn name(self) -> &'static str {
        match self {
            FlagValue::Text => "text",
            FlagValue::Whole => "whole",
            FlagValue::Seconds => "seconds",
            FlagValue::Boolean => "boolean",
            FlagValue::Repeated => "repeated",
        }
    }
}

/// One worker flag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flag {
    /// `--redis-url`, `--queue`, ...
    pub long: String,
    /// `-c`, `-q`, where there is one.
    pub short: Option<&'static str>,
    /// The setting it sets (`strict` is the one flag that is not a
    /// setting: the queues given are tried strictly in order).
    pub setting: &'static str,
    /// What its text is.
    pub value: FlagValue,
    /// One line for `--help`.
    pub help: &'static str,
}

/// The flag that makes the `--queue`s strict (`strict_queues`).
pub const STRICT: &str = "strict";

fn value_of(setting: &str) -> FlagValue {
    match setting {
        "concurrency" | "async_concurrency" | "history_max" | "dead_max_jobs" | "over_limit_max"
        | "min_replicas_acked" | "sidekiq_version" => FlagValue::Whole,
        "shard_by_queue" | "prefetch" => FlagValue::Boolean,
        "queues" | "labels" => FlagValue::Repeated,
        name if name.ends_with("_interval")
            || name.ends_with("_timeout")
            || name.ends_with("_wait")
            || name.ends_with("_threshold")
            || name.ends_with("_grace")
            || name.ends_with("_ttl") =>
        {
            FlagValue::Seconds
        }
        _ => FlagValue::Text,
    }
}

/// Every worker flag: one per setting (`strict_queues` is `--strict` with
/// `--queue`s), in the table's order.
pub fn worker_flags() -> Vec<Flag> {
    let mut flags = Vec::new();
    for setting in SETTINGS {
        let (long, short) = match setting.name {
            "queues" => ("--queue".to_string(), Some("-q")),
            "labels" => ("--label".to_string(), None),
            "concurrency" => ("--concurrency".to_string(), Some("-c")),
            "strict_queues" => {
                flags.push(Flag {
                    long: format!("--{STRICT}"),
                    short: None,
                    setting: STRICT,
                    value: FlagValue::Boolean,
                    help: "try the --queue queues strictly in the order given (strict_queues)",
                });
                continue;
            }
            name => (format!("--{}", name.replace('_', "-")), None),
        };
        flags.push(Flag {
            long,
            short,
            setting: setting.name,
            value: value_of(setting.name),
            help: setting.help,
        });
    }
    flags
}

/// The settings the flags given say, by setting name: `given` holds each
/// flag's setting with the texts given for it (one per use; a `--strict`
/// given without a value is `["true"]`). Errors name the flag and the text.
pub fn settings_from_flags(given: &[(String, Vec<String>)]) -> Result<Vec<(String, HostValue)>> {
    let flags = worker_flags();
    let mut settings = Vec::new();
    let mut strict = false;
    for (setting, texts) in given {
        let flag = flags
            .iter()
            .find(|f| f.setting == setting)
            .ok_or_else(|| Error::config("flag", setting, "no worker flag sets it"))?;
        let last = texts.last().map(String::as_str).unwrap_or("true");
        let value = match flag.value {
            FlagValue::Text => HostValue::Text(last.to_string()),
            FlagValue::Whole => HostValue::Int(last.trim().parse().map_err(|_| bad(flag, last, "a whole number"))?),
            FlagValue::Seconds => HostValue::Float(
                last.trim()
                    .parse()
                    .map_err(|_| bad(flag, last, "a number of seconds"))?,
            ),
            FlagValue::Boolean => HostValue::Bool(boolean(last).ok_or_else(|| bad(flag, last, "true or false"))?),
            FlagValue::Repeated => HostValue::List(texts.iter().map(|t| HostValue::Text(t.clone())).collect()),
        };
        if flag.setting == STRICT {
            strict = value == HostValue::Bool(true);
        } else {
            settings.push((flag.setting.to_string(), value));
        }
    }
    if strict {
        match settings.iter_mut().find(|(name, _)| name == "queues") {
            Some(queues) => queues.0 = "strict_queues".to_string(),
            None => {
                return Err(Error::config(
                    "strict",
                    "true",
                    "needs the queues to try in order (--queue)",
                ))
            }
        }
    }
    Ok(settings)
}

fn boolean(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

fn bad(flag: &Flag, text: &str, what: &str) -> Error {
    Error::config(flag.setting, format!("{text:?}"), format!("{} takes {what}", flag.long))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(pairs: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        pairs
            .iter()
            .map(|(s, t)| (s.to_string(), t.iter().map(|t| t.to_string()).collect()))
            .collect()
    }

    #[test]
    fn every_setting_has_one_flag_and_every_flag_text_becomes_a_valid_setting() {
        let flags = worker_flags();
        assert_eq!(flags.len(), SETTINGS.len());
        let mut config = crate::config::Config::default();
        for flag in &flags {
            let text: &[&str] = match flag.value {
                FlagValue::Text => match flag.setting {
                    "redis_url" => &["redis://127.0.0.1:6390/1"],
                    "fetch" => &["basic"],
                    "periodic_catch_up" => &["all"],
                    "layout" => &["sidekiq"],
                    _ => &["app"],
                },
                FlagValue::Whole => &["7"],
                // A WAIT stays within the command timeout: at most 5 s.
                FlagValue::Seconds if flag.setting == "replica_ack_timeout" => &["2"],
                FlagValue::Seconds => &["30"],
                FlagValue::Boolean => &["true"],
                FlagValue::Repeated => &["critical,3", "default"],
            };
            let settings = settings_from_flags(&given(&[(flag.setting, text), ("queues", &["a"])])).unwrap();
            for (name, value) in settings {
                config
                    .set(&name, &value)
                    .unwrap_or_else(|e| panic!("{}: {e}", flag.long));
            }
        }
    }

    #[test]
    fn strict_makes_the_queues_strict_and_bad_text_names_the_flag() {
        let settings = settings_from_flags(&given(&[("queues", &["a", "b"]), ("strict", &["true"])])).unwrap();
        assert_eq!(settings[0].0, "strict_queues");
        let error = settings_from_flags(&given(&[("concurrency", &["many"])])).unwrap_err();
        assert_eq!(error.field(), Some("concurrency"));
        assert!(
            error.to_string().contains("--concurrency takes a whole number"),
            "{error}"
        );
        assert!(settings_from_flags(&given(&[("strict", &["true"])])).is_err());
    }
}
