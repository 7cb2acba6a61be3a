//! The settings table: every setting by name, once, for every language.
//! A host language converts its value to a [`HostValue`] and calls
//! [`Config::set`]; what the value must be, and the error that names the
//! setting and the value, are decided here.

use crate::config::{CatchUp, Config, FetchMode, Layout};
use crate::error::{Error, Result};
use crate::host_value::HostValue;

/// One row of the table.
pub struct Setting {
    /// The name in every language (`concurrency`, `redis_url`, ...).
    pub name: &'static str,
    /// One line for `--help` and the docs.
    pub help: &'static str,
    apply: fn(&mut Config, &'static str, &HostValue) -> Result<()>,
    read: fn(&Config) -> HostValue,
}

/// Every setting, in the order the docs list them.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "redis_url",
        help: "Redis to use: redis://, rediss://, unix://, redis+sentinel://, redis+cluster://",
        apply: |c, name, v| c.set_redis_url(&text(name, v)?).map(drop),
        read: |c| HostValue::Text(c.redis_url_redacted()),
    },
    Setting {
        name: "namespace",
        help: "prefix of every key (hash-tagged on a Cluster, e.g. {cogworker})",
        apply: |c, name, v| c.set_namespace(&text(name, v)?).map(drop),
        read: |c| HostValue::Text(c.namespace().to_string()),
    },
    Setting {
        name: "concurrency",
        help: "jobs one worker process runs at once",
        apply: |c, name, v| c.set_concurrency(whole(name, v)?).map(drop),
        read: |c| HostValue::Int(c.concurrency() as i64),
    },
    Setting {
        name: "async_concurrency",
        help: "coroutines (Python async def handlers) one worker process runs at once, besides concurrency",
        apply: |c, name, v| c.set_async_concurrency(whole(name, v)?).map(drop),
        read: |c| HostValue::Int(c.async_concurrency() as i64),
    },
    Setting {
        name: "queues",
        help: "queues to work, each \"name\" or \"name,weight\" (weighted random order)",
        apply: |c, name, v| c.set_queues(&queue_specs(name, v)?).map(drop),
        read: |c| {
            HostValue::List(
                c.queues()
                    .iter()
                    .map(|q| HostValue::Text(format!("{},{}", q.name, q.weight)))
                    .collect(),
            )
        },
    },
    Setting {
        name: "strict_queues",
        help: "instead of queues: names tried strictly in this order",
        apply: |c, name, v| c.set_queues_strict(&queue_specs(name, v)?).map(drop),
        read: |c| HostValue::Bool(c.strict_order()),
    },
    Setting {
        name: "fetch",
        help: "\"reliable\" (jobs survive a crash; Redis >= 6.2) or \"basic\"",
        apply: |c, name, v| {
            c.set_fetch(text(name, v)?.parse::<FetchMode>()?);
            Ok(())
        },
        read: |c| {
            HostValue::Text(
                match c.fetch() {
                    FetchMode::Reliable => "reliable",
                    FetchMode::Basic => "basic",
                }
                .into(),
            )
        },
    },
    Setting {
        name: "shard_by_queue",
        help: "give each queue's keys a hash tag of their own, so on Redis Cluster queues spread over the masters (every client and worker of the namespace must agree; reliable fetch only)",
        apply: |c, name, v| match v {
            HostValue::Bool(on) => {
                c.set_shard_by_queue(*on);
                Ok(())
            }
            other => Err(Error::config(name, other, "must be true or false")),
        },
        read: |c| HostValue::Bool(c.shard_by_queue()),
    },
    Setting {
        name: "layout",
        help: "\"cogworker\" (its own keys, under the namespace) or \"sidekiq\" (Sidekiq's queues, schedule, retry and dead sets, processes and counters, so Sidekiq processes, clients and its Web UI share them; every client and worker of the namespace must agree; see docs/sidekiq.md)",
        apply: |c, name, v| {
            c.set_layout(text(name, v)?.parse::<Layout>()?);
            Ok(())
        },
        read: |c| HostValue::Text(c.layout().as_str().into()),
    },
    Setting {
        name: "sidekiq_version",
        help: "with layout \"sidekiq\": the Sidekiq major version whose formats are written, 6, 7 or 8 (process records differ from 7 on, job times are milliseconds from 8; jobs of every version are read)",
        apply: |c, name, v| c.set_sidekiq_version(whole(name, v)?).map(drop),
        read: |c| HostValue::Int(c.sidekiq_version() as i64),
    },
    Setting {
        name: "prefetch",
        help: "while jobs are short, a worker holds more jobs than it runs (as many as add up to 2 ms of work at the average job time, at most 3 x concurrency), so its slots never wait on Redis between jobs; one whose slots all hang on long jobs gives back what waits (reliable fetch only); false: never more than concurrency",
        apply: |c, name, v| match v {
            HostValue::Bool(on) => {
                c.set_prefetch(*on);
                Ok(())
            }
            other => Err(Error::config(name, other, "must be true or false")),
        },
        read: |c| HostValue::Bool(c.prefetch()),
    },
    Setting {
        name: "fetch_idle_max_interval",
        help: "longest an idle worker waits for a wake-up before looking at its queues again (a job pushed without one, e.g. by a raw LPUSH, waits at most this long; with shard_by_queue each such look reads one queue, in turn), in seconds",
        apply: |c, name, v| c.set_fetch_idle_max_interval(seconds(name, v)?).map(drop),
        read: |c| HostValue::Float(c.fetch_idle_max_interval().as_secs_f64()),
    },
    Setting {
        name: "heartbeat_interval",
        help: "seconds between a process's heartbeats",
        apply: |c, name, v| c.set_heartbeat_interval(seconds(name, v)?).map(drop),
        read: |c| HostValue::Float(c.heartbeat_interval().as_secs_f64()),
    },
    Setting {
        name: "orphan_threshold",
        help: "seconds without a heartbeat after which a process is dead and its jobs are requeued",
        apply: |c, name, v| c.set_orphan_threshold(seconds(name, v)?).map(drop),
        read: |c| HostValue::Float(c.orphan_threshold()),
    },
    Setting {
        name: "orphan_check_interval",
        help: "seconds between looks for dead processes",
        apply: |c, name, v| c.set_orphan_check_interval(seconds(name, v)?).map(drop),
        read: |c| HostValue::Float(c.orphan_check_interval().as_secs_f64()),
    },
    Setting {
        name: "scheduler_poll_interval",
        help: "seconds between moves of due scheduled jobs and retries to their queues",
        apply: |c, name, v| c.set_scheduler_poll_interval(seconds(name, v)?).map(drop),
        read: |c| HostValue::Float(c.scheduler_poll_interval().as_secs_f64()),
    },
    Setting {
        name: "shutdown_timeout",
        help: "seconds running jobs may finish at stop before they are requeued",
        apply: |c, name, v| c.set_shutdown_timeout(seconds(name, v)?).map(drop),
        read: |c| HostValue::Float(c.shutdown_timeout().as_secs_f64()),
    },
    Setting {
        name: "timeout_grace",
        help: "seconds a job may run on past its time limit (timeout) without stopping before its process is ended and replaced (with -p N) or, otherwise, reported",
        apply: |c, name, v| c.set_timeout_grace(seconds(name, v)?).map(drop),
        read: |c| HostValue::Float(c.timeout_grace().as_secs_f64()),
    },
    Setting {
        name: "min_replicas_acked",
        help: "a push returns only once this many replicas have it (WAIT), else raises NotReplicated (the job is on the master; a failover now may lose it); 0: no wait (a failover may lose a push acknowledged in its last moments)",
        apply: |c, name, v| c.set_min_replicas_acked(whole(name, v)?).map(drop),
        read: |c| HostValue::Int(i64::from(c.min_replicas_acked())),
    },
    Setting {
        name: "replica_ack_timeout",
        help: "seconds a push waits for min_replicas_acked replicas before it raises NotReplicated",
        apply: |c, name, v| c.set_replica_ack_timeout(seconds(name, v)?).map(drop),
        read: |c| HostValue::Float(c.replica_ack_timeout().as_secs_f64()),
    },
    Setting {
        name: "unique_lock_ttl",
        help: "seconds a periodic until_executed lock lasts while its job waits in a queue",
        apply: |c, name, v| c.set_unique_lock_ttl(seconds(name, v)?).map(drop),
        read: |c| HostValue::Float(c.unique_lock_ttl()),
    },
    Setting {
        name: "periodic_catch_up",
        help: "after downtime: \"latest\" fires the newest missed slot, \"all\" every one (newest 100)",
        apply: |c, name, v| {
            c.set_periodic_catch_up(text(name, v)?.parse::<CatchUp>()?);
            Ok(())
        },
        read: |c| {
            HostValue::Text(
                match c.periodic_catch_up() {
                    CatchUp::Latest => "latest",
                    CatchUp::All => "all",
                }
                .into(),
            )
        },
    },
    Setting {
        name: "labels",
        help: "labels shown for the process",
        apply: |c, name, v| {
            c.set_labels(&texts(name, v)?);
            Ok(())
        },
        read: |c| HostValue::List(c.labels().iter().cloned().map(HostValue::Text).collect()),
    },
    Setting {
        name: "history_max",
        help: "entries kept in the History list",
        apply: |c, name, v| {
            let n = whole(name, v)?;
            let n = usize::try_from(n).map_err(|_| Error::config(name, v, "must be a whole number >= 0"))?;
            c.set_history_max(n);
            Ok(())
        },
        read: |c| HostValue::Int(c.history_max() as i64),
    },
    Setting {
        name: "over_limit_max",
        help: "times a job over a rate limiter it declares is rescheduled before it fails (cogworker::OverLimit)",
        apply: |c, name, v| {
            let n = whole(name, v)?;
            let n = u32::try_from(n).map_err(|_| Error::config(name, v, "must be a whole number >= 0"))?;
            c.set_over_limit_max(n);
            Ok(())
        },
        read: |c| HostValue::Int(i64::from(c.over_limit_max())),
    },
    Setting {
        name: "over_limit_wait",
        help: "seconds a job over a rate limiter it declares waits in the worker for capacity before it is rescheduled",
        apply: |c, name, v| c.set_over_limit_wait(seconds(name, v)?).map(drop),
        read: |c| HostValue::Float(c.over_limit_wait().as_secs_f64()),
    },
    Setting {
        name: "dead_max_jobs",
        help: "most jobs kept in dead (the oldest are trimmed)",
        apply: |c, name, v| {
            let n = whole(name, v)?;
            let n = usize::try_from(n).map_err(|_| Error::config(name, v, "must be at least 1"))?;
            c.set_dead_max_jobs(n).map(drop)
        },
        read: |c| HostValue::Int(c.dead_max_jobs() as i64),
    },
    Setting {
        name: "dead_timeout",
        help: "seconds a job is kept in dead before it is trimmed",
        apply: |c, name, v| c.set_dead_timeout(seconds(name, v)?).map(drop),
        read: |c| HostValue::Float(c.dead_timeout_secs()),
    },
];

impl Config {
    /// Sets the setting `name` (see [`SETTINGS`]) from a host language's
    /// value. The error names the setting and the value.
    pub fn set(&mut self, name: &str, value: &HostValue) -> Result<&mut Self> {
        let setting = setting(name)?;
        (setting.apply)(self, setting.name, value)?;
        Ok(self)
    }

    /// The current value of the setting `name` (a password in `redis_url`
    /// is masked).
    pub fn get(&self, name: &str) -> Result<HostValue> {
        Ok((setting(name)?.read)(self))
    }
}

fn setting(name: &str) -> Result<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name).ok_or_else(|| {
        let known: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
        Error::config(
            "setting",
            format!("{name:?}"),
            format!("no such setting (known: {})", known.join(", ")),
        )
    })
}

fn text(name: &'static str, value: &HostValue) -> Result<String> {
    match value {
        HostValue::Text(s) => Ok(s.clone()),
        other => Err(Error::config(name, other, "must be a string")),
    }
}

fn whole(name: &'static str, value: &HostValue) -> Result<i64> {
    match value {
        HostValue::Int(n) => Ok(*n),
        other => Err(Error::config(name, other, "must be a whole number")),
    }
}

fn seconds(name: &'static str, value: &HostValue) -> Result<f64> {
    value
        .as_seconds()
        .ok_or_else(|| Error::config(name, value, "must be a number of seconds or a duration"))
}

/// A string, or a list of strings.
fn texts(name: &'static str, value: &HostValue) -> Result<Vec<String>> {
    match value {
        HostValue::Text(s) => Ok(vec![s.clone()]),
        HostValue::List(items) => items.iter().map(|item| text(name, item)).collect(),
        other => Err(Error::config(name, other, "must be a list of strings")),
    }
}

/// Queue specs: `"name"`, `"name,weight"` or a `[name, weight]` pair, alone
/// or in a list.
fn queue_specs(name: &'static str, value: &HostValue) -> Result<Vec<String>> {
    let one = |item: &HostValue| match item {
        HostValue::Text(s) => Ok(s.clone()),
        HostValue::List(pair) => match pair.as_slice() {
            [HostValue::Text(queue), HostValue::Int(weight)] => Ok(format!("{queue},{weight}")),
            _ => Err(Error::config(
                name,
                item,
                "each entry must be \"name\", \"name,weight\" or a [name, weight] pair",
            )),
        },
        other => Err(Error::config(
            name,
            other,
            "each entry must be \"name\", \"name,weight\" or a [name, weight] pair",
        )),
    };
    match value {
        HostValue::List(items) => items.iter().map(one).collect(),
        single => Ok(vec![one(single)?]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, value: HostValue) -> Result<Config> {
        let mut config = Config::default();
        config.set(name, &value)?;
        Ok(config)
    }

    #[test]
    fn every_setting_reads_back_what_it_was_given() {
        for setting in SETTINGS {
            let config = Config::default();
            let value = config.get(setting.name).unwrap();
            // strict_queues reads as a flag; the rest round-trip.
            if setting.name != "strict_queues" && setting.name != "redis_url" {
                let mut again = Config::default();
                again
                    .set(setting.name, &value)
                    .unwrap_or_else(|e| panic!("{}: {e}", setting.name));
                assert_eq!(again.get(setting.name).unwrap(), value, "{}", setting.name);
            }
        }
    }

    #[test]
    fn errors_name_the_setting_and_the_value() {
        let err = set("concurrency", HostValue::Text("ten".into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("concurrency") && err.contains("\"ten\""), "{err}");
        let err = set("concurrency", HostValue::Float(2.5)).unwrap_err().to_string();
        assert!(err.contains("concurrency") && err.contains("2.5"), "{err}");
        let err = set("concurency", HostValue::Int(2)).unwrap_err().to_string();
        assert!(err.contains("concurency") && err.contains("concurrency"), "{err}");
        let err = set("shutdown_timeout", HostValue::Bool(true)).unwrap_err().to_string();
        assert!(err.contains("shutdown_timeout") && err.contains("true"), "{err}");
        let pair = HostValue::List(vec![HostValue::Text("a".into()), HostValue::Text("b".into())]);
        let err = set("queues", HostValue::List(vec![pair])).unwrap_err().to_string();
        assert!(err.contains("queues") && err.contains("[\"a\", \"b\"]"), "{err}");
    }

    #[test]
    fn queues_take_names_weights_and_pairs() {
        let value = HostValue::List(vec![
            HostValue::List(vec![HostValue::Text("critical".into()), HostValue::Int(3)]),
            HostValue::Text("default".into()),
            HostValue::Text("low,2".into()),
        ]);
        let config = set("queues", value).unwrap();
        let weights: Vec<(&str, u32)> = config.queues().iter().map(|q| (q.name.as_str(), q.weight)).collect();
        assert_eq!(weights, [("critical", 3), ("default", 1), ("low", 2)]);
        let config = set("strict_queues", HostValue::Text("only".into())).unwrap();
        assert!(config.strict_order());
    }

    #[test]
    fn every_setting_is_in_the_docs() {
        let docs = include_str!("../../docs/configuration.md");
        for setting in SETTINGS {
            assert!(
                docs.contains(&format!("| `{}` |", setting.name)),
                "docs/configuration.md lacks {}",
                setting.name
            );
        }
    }
}
