//! The admin commands of the `cogworker` CLIs (Python and Ruby), written
//! once: each runs ops-API calls and returns the text to print.

use crate::api::{Api, JobSet};
use crate::error::{Error, Result};
use crate::job::now;
use crate::printable::shown;
use crate::retry::day_of;
use std::fmt::Write as _;

/// One admin command.
pub struct AdminCommand {
    /// As typed: `cogworker <name> [ARG]`.
    pub name: &'static str,
    /// The argument it takes, if any (`SET`, `QUEUE`, `IDENTITY`).
    pub arg: Option<&'static str>,
    /// One line for `--help`.
    pub help: &'static str,
}

/// Every admin command.
pub const COMMANDS: &[AdminCommand] = &[
    AdminCommand {
        name: "stats",
        arg: None,
        help: "processed, failed and expired totals and today, set sizes",
    },
    AdminCommand {
        name: "queues",
        arg: None,
        help: "queues with size, latency, paused",
    },
    AdminCommand {
        name: "processes",
        arg: None,
        help: "live worker processes",
    },
    AdminCommand {
        name: "busy",
        arg: None,
        help: "the jobs running now",
    },
    AdminCommand {
        name: "limiters",
        arg: None,
        help: "rate limiters: kind, limit, in use, refused",
    },
    AdminCommand {
        name: "retry-all",
        arg: Some("SET"),
        help: "retry every job of a set now (scheduled, retry, dead)",
    },
    AdminCommand {
        name: "clear",
        arg: Some("SET"),
        help: "delete every job of a set",
    },
    AdminCommand {
        name: "pause",
        arg: Some("QUEUE"),
        help: "pause a queue",
    },
    AdminCommand {
        name: "unpause",
        arg: Some("QUEUE"),
        help: "resume a queue",
    },
    AdminCommand {
        name: "clear-queue",
        arg: Some("QUEUE"),
        help: "delete every job on a queue",
    },
    AdminCommand {
        name: "cancel",
        arg: Some("JID"),
        help: "cancel a job (waiting, scheduled, retrying or running); says where it was",
    },
    AdminCommand {
        name: "quiet",
        arg: Some("IDENTITY"),
        help: "tell a process to stop taking jobs",
    },
    AdminCommand {
        name: "stop",
        arg: Some("IDENTITY"),
        help: "tell a process to shut down",
    },
    AdminCommand {
        name: "bench",
        arg: Some("[JOBS]"),
        help: "measure push, drain and pickup against this Redis, in a namespace of its own; \
               JOBS: jobs per phase, 1 to 1000000 (default 10000)",
    },
];

/// Runs `command` (with its argument, if it takes one); the output to print.
pub async fn run(api: &Api, command: &str, arg: Option<&str>) -> Result<String> {
    let Some(spec) = COMMANDS.iter().find(|c| c.name == command) else {
        return Err(Error::invalid_argument(
            "command",
            format!("{command:?}"),
            "no such admin command",
        ));
    };
    let target = match (spec.arg, arg) {
        // `[ARG]`: the argument may be left out.
        (Some(name), None) if !name.starts_with('[') => {
            return Err(Error::invalid_argument(command, "nothing", format!("takes {name}")));
        }
        (_, arg) => arg.unwrap_or_default(),
    };
    let shown_target = shown(target);
    let mut out = String::new();
    match command {
        "stats" => {
            let (totals, today) = (api.stats().await?, api.stats_for(Some(&day_of(now()))).await?);
            let _ = writeln!(out, "processed  {:>12}  today {}", totals.processed, today.processed);
            let _ = writeln!(out, "failed     {:>12}  today {}", totals.failed, today.failed);
            let _ = writeln!(out, "expired    {:>12}  today {}", totals.expired, today.expired);
            let _ = writeln!(out, "cancelled  {:>12}  today {}", totals.cancelled, today.cancelled);
            let _ = writeln!(out, "collapsed  {:>12}  today {}", totals.collapsed, today.collapsed);
            let _ = writeln!(out, "throttled  {:>12}  today {}", totals.throttled, today.throttled);
            let _ = writeln!(out, "replaced   {:>12}  today {}", totals.replaced, today.replaced);
            let _ = writeln!(
                out,
                "backlog dropped {:>7}  today {}",
                totals.backlog_dropped, today.backlog_dropped
            );
            for (name, set) in [
                ("scheduled", JobSet::Scheduled),
                ("retry", JobSet::Retry),
                ("dead", JobSet::Dead),
            ] {
                let _ = writeln!(out, "{name:<10} {:>12}", api.set_size(set).await?);
            }
        }
        "queues" => {
            let _ = writeln!(out, "{:<24} {:>10} {:>10}  STATE", "QUEUE", "SIZE", "LATENCY");
            for q in api.queues().await? {
                let state = if q.paused { "paused" } else { "running" };
                let _ = writeln!(
                    out,
                    "{:<24} {:>10} {:>9.1}s  {state}",
                    shown(&q.name),
                    q.size,
                    q.latency
                );
            }
        }
        "processes" => {
            let processes = api.processes().await?;
            if processes.is_empty() {
                out.push_str("no worker processes are running\n");
            }
            for p in processes {
                let queues: Vec<_> = p.info["queues"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|q| q.as_str())
                    .map(shown)
                    .collect();
                let quiet = if p.quiet { "  quiet" } else { "" };
                let concurrency = shown(&p.info["concurrency"].to_string()).into_owned();
                let _ = writeln!(
                    out,
                    "{}  busy {}/{concurrency}  queues {}{quiet}",
                    shown(&p.identity),
                    p.busy,
                    queues.join(" ")
                );
            }
        }
        "busy" => {
            let busy = api.busy().await?;
            if busy.is_empty() {
                out.push_str("no jobs are running\n");
            }
            for b in busy {
                let class = shown(b.job["class"].as_str().unwrap_or_default());
                let jid = shown(b.job["jid"].as_str().unwrap_or_default());
                let _ = writeln!(
                    out,
                    "{}  {class} jid={jid} queue={}  {:.1}s",
                    shown(&b.identity),
                    shown(&b.queue),
                    now() - b.run_at
                );
            }
        }
        "limiters" => {
            let limiters = api.limiters().await?;
            if limiters.is_empty() {
                out.push_str("no rate limiters are defined\n");
            }
            for l in limiters {
                let per = l
                    .interval
                    .map(|i| format!(" per {i}s"))
                    .unwrap_or_else(|| " at once".into());
                let _ = writeln!(
                    out,
                    "{:<24} {:<10} {:>6}{per:<14} in use {:>6}  refused {}",
                    shown(&l.name),
                    l.kind,
                    l.limit,
                    l.in_use,
                    l.refused
                );
            }
        }
        "retry-all" => {
            let moved = api.retry_all(target.parse()?).await?;
            let _ = writeln!(out, "retried {moved} job(s) from {shown_target}");
        }
        "clear" => {
            let deleted = api.clear_set(target.parse()?).await?;
            let _ = writeln!(out, "deleted {deleted} job(s) from {shown_target}");
        }
        "cancel" => {
            let was = api.cancel(target).await?;
            let _ = writeln!(out, "cancel: {shown_target} ({was})");
        }
        "clear-queue" => {
            let deleted = api.clear_queue(target).await?;
            let _ = writeln!(out, "deleted {deleted} job(s) from queue {shown_target}");
        }
        "pause" | "unpause" | "quiet" | "stop" => {
            known_target(api, command, target).await?;
            match command {
                "pause" => api.pause_queue(target).await?,
                "unpause" => api.unpause_queue(target).await?,
                "quiet" => api.quiet_process(target).await?,
                _ => api.stop_process(target).await?,
            }
            let _ = writeln!(out, "{command}: {shown_target}");
        }
        "bench" => {
            let jobs = crate::bench::jobs_from(arg)?;
            // Its phases on stderr as they begin; the table on stdout.
            let progress = |line: &str| {
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "{line}");
            };
            out = crate::bench::run(api.client().config(), jobs, progress).await?;
        }
        _ => unreachable!("every command in COMMANDS is handled"),
    }
    Ok(out)
}

/// What pause/unpause and quiet/stop may act on: a queue that has been
/// pushed to (a typo would pause a queue no worker reads, and nothing would
/// show it), a process that is running (a signal to no one was a silent
/// success).
async fn known_target(api: &Api, command: &str, target: &str) -> Result<()> {
    let (known, missing) = if command.ends_with("pause") {
        let queues = api.queues().await?.into_iter().map(|q| q.name);
        (queues.collect::<Vec<_>>(), "no such queue (known: ")
    } else {
        let processes = api.processes().await?.into_iter().map(|p| p.identity);
        (processes.collect(), "no such process is running (running: ")
    };
    if known.iter().any(|name| name == target) {
        return Ok(());
    }
    Err(Error::invalid_argument(
        command,
        format!("{:?}", shown(target)),
        format!("{missing}{})", listed(&known)),
    ))
}

/// Up to 10 names, shown safely, or "none".
fn listed(names: &[String]) -> String {
    if names.is_empty() {
        return "none".into();
    }
    let mut shown_names: Vec<String> = names.iter().take(10).map(|n| shown(n).into_owned()).collect();
    if names.len() > 10 {
        shown_names.push(format!("… {} more", names.len() - 10));
    }
    shown_names.join(", ")
}
