//! Settings (docs/configuration.md). Every setter validates and names the bad value.

use crate::error::{Error, Result};
use std::time::Duration;

mod modes;
mod queue_spec;

pub use modes::{CatchUp, FetchMode, Layout};
use queue_spec::parse_queue_list;
pub(crate) use queue_spec::validate_queue_name;
pub use queue_spec::QueueSpec;

/// Worker and client settings. Build with [`Config::default`] or
/// [`Config::from_env`], then adjust with the validating setters.
#[derive(Clone, Debug)]
pub struct Config {
    redis_url: crate::redis_url::RedisUrl,
    namespace: String,
    concurrency: usize,
    async_concurrency: usize,
    queues: Vec<QueueSpec>,
    strict_order: bool,
    fetch: FetchMode,
    shard_by_queue: bool,
    layout: Layout,
    sidekiq_version: u8,
    prefetch: bool,
    fetch_idle_max_interval: f64,
    orphan_threshold: f64,
    orphan_check_interval: f64,
    shutdown_timeout: f64,
    timeout_grace: f64,
    unique_lock_ttl: f64,
    periodic_catch_up: CatchUp,
    labels: Vec<String>,
    heartbeat_interval: f64,
    scheduler_poll_interval: f64,
    history_max: usize,
    over_limit_max: u32,
    over_limit_wait: f64,
    dead_max_jobs: usize,
    dead_timeout: f64,
    min_replicas_acked: u32,
    replica_ack_timeout: f64,
}

/// Where Redis is when nothing says otherwise.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379/0";

/// The most replicas a push may wait for (`min_replicas_acked`).
pub const MAX_REPLICAS_ACKED: i64 = 16;

/// Slack beyond two heartbeats before a silent process counts as dead.
const ORPHAN_MARGIN_SECS: f64 = 1.0;

impl Default for Config {
    fn default() -> Self {
        Config {
            redis_url: crate::redis_url::RedisUrl(DEFAULT_REDIS_URL.to_string()),
            namespace: "cogworker".to_string(),
            concurrency: 10,
            async_concurrency: 100,
            queues: vec![QueueSpec {
                name: "default".into(),
                weight: 1,
            }],
            strict_order: false,
            fetch: FetchMode::Reliable,
            shard_by_queue: false,
            layout: Layout::Cogworker,
            sidekiq_version: 7,
            prefetch: true,
            fetch_idle_max_interval: 1.0,
            orphan_threshold: 300.0,
            orphan_check_interval: 60.0,
            shutdown_timeout: 25.0,
            timeout_grace: 10.0,
            unique_lock_ttl: 86_400.0,
            periodic_catch_up: CatchUp::Latest,
            labels: Vec::new(),
            heartbeat_interval: 5.0,
            scheduler_poll_interval: 5.0,
            history_max: 1_000,
            over_limit_max: 20,
            over_limit_wait: 5.0,
            dead_max_jobs: 10_000,
            dead_timeout: 180.0 * 86_400.0,
            min_replicas_acked: 0,
            replica_ack_timeout: 1.0,
        }
    }
}

fn positive(field: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(Error::config(field, value, "must be a positive number of seconds"))
    }
}

/// Names a file holding the Redis URL.
pub const REDIS_URL_FILE_ENV: &str = "COGWORKER_REDIS_URL_FILE";

/// The secret in the file the environment variable `var` names (trimmed),
/// if it names one; an unreadable file is an error naming `field`.
pub fn secret_file(field: &'static str, var: &str) -> Result<Option<String>> {
    let Some(path) = std::env::var_os(var).filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text.trim().to_string())),
        Err(e) => Err(Error::config(
            field,
            format!("{var}={}", std::path::Path::new(&path).display()),
            format!("cannot be read: {e}"),
        )),
    }
}

impl Config {
    /// Defaults, with `redis_url` from the file `COGWORKER_REDIS_URL_FILE`
    /// names (a secret kept out of the environment and the command line),
    /// else `COGWORKER_REDIS_URL`, then `REDIS_URL`.
    pub fn from_env() -> Result<Self> {
        let mut config = Config::default();
        if let Some(url) = secret_file("redis_url", REDIS_URL_FILE_ENV)? {
            config.set_redis_url(&url)?;
            return Ok(config);
        }
        for var in ["COGWORKER_REDIS_URL", "REDIS_URL"] {
            if let Ok(url) = std::env::var(var) {
                if !url.is_empty() {
                    config.set_redis_url(&url)?;
                    break;
                }
            }
        }
        Ok(config)
    }

    /// `redis://`, `rediss://` (TLS), `unix://`,
    /// `redis+sentinel://host:port[,host:port...]/service[/db]`, or
    /// `redis+cluster://host:port[,host:port...]` (with a hash-tagged
    /// namespace such as `{cogworker}`).
    pub fn set_redis_url(&mut self, url: &str) -> Result<&mut Self> {
        crate::redis_url::check(url)?;
        self.redis_url = crate::redis_url::RedisUrl(url.to_string());
        Ok(self)
    }
    /// The prefix of every key (hash-tagged on a Cluster, e.g. `{cogworker}`).
    pub fn set_namespace(&mut self, namespace: &str) -> Result<&mut Self> {
        if namespace.is_empty() || namespace.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Error::config(
                "namespace",
                format!("{namespace:?}"),
                "must be non-empty, without whitespace",
            ));
        }
        self.namespace = namespace.to_string();
        Ok(self)
    }
    /// How many coroutines run at once (1 to 100,000); the error names the
    /// setting and the value.
    pub fn set_async_concurrency(&mut self, async_concurrency: i64) -> Result<&mut Self> {
        if !(1..=100_000).contains(&async_concurrency) {
            return Err(Error::config(
                "async_concurrency",
                async_concurrency,
                "must be between 1 and 100000",
            ));
        }
        self.async_concurrency = async_concurrency as usize;
        Ok(self)
    }

    /// Jobs one worker process runs at once (1 to 10,000).
    pub fn set_concurrency(&mut self, concurrency: i64) -> Result<&mut Self> {
        if !(1..=10_000).contains(&concurrency) {
            return Err(Error::config("concurrency", concurrency, "must be between 1 and 10000"));
        }
        self.concurrency = concurrency as usize;
        Ok(self)
    }
    /// Queues tried in weighted random order (`name` or `name,weight`).
    pub fn set_queues<S: AsRef<str>>(&mut self, specs: &[S]) -> Result<&mut Self> {
        self.queues = parse_queue_list(specs)?;
        self.strict_order = false;
        Ok(self)
    }
    /// Queues tried strictly in the order given (weights are not allowed).
    pub fn set_queues_strict<S: AsRef<str>>(&mut self, names: &[S]) -> Result<&mut Self> {
        let queues = parse_queue_list(names)?;
        if let Some(q) = queues.iter().find(|q| q.weight != 1) {
            return Err(Error::config(
                "queues",
                format!("{}:{}", q.name, q.weight),
                "strict order takes no weights",
            ));
        }
        self.queues = queues;
        self.strict_order = true;
        Ok(self)
    }
    /// Give each queue's keys (the queue, the jobs taken from it and in
    /// progress, its pause flag) a hash tag of their own, `{ns:<queue>}`,
    /// so that on Redis Cluster different queues live on different masters
    /// (docs/scaling.md). Every client and worker of a namespace must agree.
    /// Needs reliable fetch. Off by default: every key on the namespace's slot.
    pub fn set_shard_by_queue(&mut self, on: bool) -> &mut Self {
        self.shard_by_queue = on;
        self
    }
    /// Let a worker hold more jobs than it runs while its jobs are short
    /// (on by default; reliable fetch only): as many as add up to 2 ms of
    /// work at the average job time, at most 3 × `concurrency`, taken in
    /// the same fetches, so a slot back from a job finds the next one
    /// waiting instead of waiting a round trip to Redis for it. A worker
    /// whose slots all hang on long jobs takes no more and gives back what
    /// waits. Off: never more than `concurrency`. See docs/configuration.md.
    pub fn set_prefetch(&mut self, on: bool) -> &mut Self {
        self.prefetch = on;
        self
    }
    /// Reliable (default) or basic fetch.
    pub fn set_fetch(&mut self, mode: FetchMode) -> &mut Self {
        self.fetch = mode;
        self
    }
    /// Longest block of one idle wait for a job. With `shard_by_queue` the
    /// poll after such a wait reads one queue, the next in turn each time.
    pub fn set_fetch_idle_max_interval(&mut self, seconds: f64) -> Result<&mut Self> {
        self.fetch_idle_max_interval = positive("fetch_idle_max_interval", seconds)?;
        Ok(self)
    }
    /// A process silent this long is dead: its in-progress jobs are requeued.
    pub fn set_orphan_threshold(&mut self, seconds: f64) -> Result<&mut Self> {
        self.orphan_threshold = positive("orphan_threshold", seconds)?;
        Ok(self)
    }
    /// How often each process looks for dead ones.
    pub fn set_orphan_check_interval(&mut self, seconds: f64) -> Result<&mut Self> {
        self.orphan_check_interval = positive("orphan_check_interval", seconds)?;
        Ok(self)
    }
    /// How long running jobs may finish at stop before they are requeued.
    pub fn set_shutdown_timeout(&mut self, seconds: f64) -> Result<&mut Self> {
        if !(seconds.is_finite() && seconds >= 0.0) {
            return Err(Error::config(
                "shutdown_timeout",
                seconds,
                "must be zero or a positive number of seconds",
            ));
        }
        self.shutdown_timeout = seconds;
        Ok(self)
    }
    /// How long a job may go on past its time limit (`timeout`) without
    /// stopping before its process is ended and replaced (in a child of
    /// `-p N`) or reported (see [`crate::time_limit`]).
    pub fn set_timeout_grace(&mut self, seconds: f64) -> Result<&mut Self> {
        self.timeout_grace = positive("timeout_grace", seconds)?;
        Ok(self)
    }
    /// A push returns only once this many replicas of its Redis have it
    /// (`WAIT` after the push), else fails with [`Error::NotReplicated`]
    /// (the job is on the master, but a failover now may lose it); 0, the
    /// default, does not wait (asynchronous replication: a failover may
    /// lose a push acknowledged in its last moments).
    pub fn set_min_replicas_acked(&mut self, replicas: i64) -> Result<&mut Self> {
        if !(0..=MAX_REPLICAS_ACKED).contains(&replicas) {
            return Err(Error::config(
                "min_replicas_acked",
                replicas,
                format!("must be between 0 and {MAX_REPLICAS_ACKED}"),
            ));
        }
        self.min_replicas_acked = replicas as u32;
        Ok(self)
    }
    /// How long a push waits for [`Config::set_min_replicas_acked`]'s
    /// replicas before it fails.
    pub fn set_replica_ack_timeout(&mut self, seconds: f64) -> Result<&mut Self> {
        let seconds = positive("replica_ack_timeout", seconds)?;
        // Within the command timeout (10 s), which a longer WAIT would hit.
        if seconds > 5.0 {
            return Err(Error::config(
                "replica_ack_timeout",
                seconds,
                "must be at most 5 seconds",
            ));
        }
        self.replica_ack_timeout = seconds;
        Ok(self)
    }
    /// See [`Config::set_min_replicas_acked`].
    pub fn min_replicas_acked(&self) -> u32 {
        self.min_replicas_acked
    }
    /// See [`Config::set_replica_ack_timeout`].
    pub fn replica_ack_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.replica_ack_timeout)
    }
    /// Lifetime of a periodic `until_executed` lock while its job is queued.
    pub fn set_unique_lock_ttl(&mut self, seconds: f64) -> Result<&mut Self> {
        self.unique_lock_ttl = positive("unique_lock_ttl", seconds)?;
        Ok(self)
    }
    /// What periodic entries do about slots missed while no process ran.
    pub fn set_periodic_catch_up(&mut self, catch_up: CatchUp) -> &mut Self {
        self.periodic_catch_up = catch_up;
        self
    }
    /// Labels shown for the process.
    pub fn set_labels<S: AsRef<str>>(&mut self, labels: &[S]) -> &mut Self {
        self.labels = labels.iter().map(|l| l.as_ref().to_string()).collect();
        self
    }
    /// Seconds between a process's heartbeats.
    pub fn set_heartbeat_interval(&mut self, seconds: f64) -> Result<&mut Self> {
        self.heartbeat_interval = positive("heartbeat_interval", seconds)?;
        Ok(self)
    }
    /// Seconds between moves of due scheduled jobs and retries.
    pub fn set_scheduler_poll_interval(&mut self, seconds: f64) -> Result<&mut Self> {
        self.scheduler_poll_interval = positive("scheduler_poll_interval", seconds)?;
        Ok(self)
    }
    /// Entries kept in the History list.
    pub fn set_history_max(&mut self, entries: usize) -> &mut Self {
        self.history_max = entries;
        self
    }
    /// Seconds a job over a rate limiter it declares waits in the worker
    /// for capacity (holding a slot) before it goes back to the schedule:
    /// 0 to 3600.
    pub fn set_over_limit_wait(&mut self, seconds: f64) -> Result<&mut Self> {
        if !(seconds.is_finite() && (0.0..=3600.0).contains(&seconds)) {
            return Err(Error::config(
                "over_limit_wait",
                seconds,
                "must be from 0 to 3600 seconds",
            ));
        }
        self.over_limit_wait = seconds;
        Ok(self)
    }
    /// How many times a job over a rate limiter it declares is rescheduled
    /// before it fails with `cogworker::OverLimit`.
    pub fn set_over_limit_max(&mut self, times: u32) -> &mut Self {
        self.over_limit_max = times;
        self
    }
    /// Seconds a job is kept in `dead` before it is trimmed.
    pub fn set_dead_timeout(&mut self, seconds: f64) -> Result<&mut Self> {
        self.dead_timeout = positive("dead_timeout", seconds)?;
        Ok(self)
    }
    /// Most jobs kept in `dead` (the oldest are trimmed).
    pub fn set_dead_max_jobs(&mut self, entries: usize) -> Result<&mut Self> {
        if entries == 0 {
            return Err(Error::config("dead_max_jobs", entries, "must be at least 1"));
        }
        self.dead_max_jobs = entries;
        Ok(self)
    }

    /// The Redis URL, password included.
    pub fn redis_url(&self) -> &str {
        &self.redis_url.0
    }
    /// The key prefix.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }
    /// Jobs one process runs at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }
    /// Coroutines a host's event loop runs at once (Python `async def`
    /// handlers), besides the `concurrency` thread slots.
    pub fn async_concurrency(&self) -> usize {
        self.async_concurrency
    }
    /// The queues to work, with their weights.
    pub fn queues(&self) -> &[QueueSpec] {
        &self.queues
    }
    /// Whether queues are tried strictly in order.
    pub fn strict_order(&self) -> bool {
        self.strict_order
    }
    /// Reliable or basic fetch.
    pub fn fetch(&self) -> FetchMode {
        self.fetch
    }
    /// Whose keys and formats the namespace uses (see [`Layout`]).
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// Use Sidekiq's keys and formats (or cogworker's own). Every client
    /// and worker of a namespace must agree.
    pub fn set_layout(&mut self, layout: Layout) -> &mut Self {
        self.layout = layout;
        self
    }
    /// The Sidekiq major version whose formats the `sidekiq` layout
    /// writes (it reads those of every version it supports).
    pub fn sidekiq_version(&self) -> u8 {
        self.sidekiq_version
    }
    /// The Sidekiq major version to write for: 6, 7 or 8 (8 writes a job's
    /// `created_at` and `enqueued_at` in integer milliseconds).
    pub fn set_sidekiq_version(&mut self, version: i64) -> Result<&mut Self> {
        if !(6..=8).contains(&version) {
            return Err(Error::config("sidekiq_version", version, "must be 6, 7 or 8"));
        }
        self.sidekiq_version = version as u8;
        Ok(self)
    }
    /// Do queues have hash tags of their own (see [`Config::set_shard_by_queue`])?
    pub fn shard_by_queue(&self) -> bool {
        self.shard_by_queue
    }
    /// May a worker hold more jobs than it runs (see [`Config::set_prefetch`])?
    pub fn prefetch(&self) -> bool {
        self.prefetch
    }
    /// Longest block of one idle wait.
    pub fn fetch_idle_max_interval(&self) -> Duration {
        Duration::from_secs_f64(self.fetch_idle_max_interval)
    }
    /// Seconds of silence after which a process is dead.
    pub fn orphan_threshold(&self) -> f64 {
        self.orphan_threshold
    }
    /// How often processes look for dead ones.
    pub fn orphan_check_interval(&self) -> Duration {
        Duration::from_secs_f64(self.orphan_check_interval)
    }
    /// How long running jobs may finish at stop.
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.shutdown_timeout)
    }
    /// How long a job may ignore its time limit (see
    /// [`Config::set_timeout_grace`]).
    pub fn timeout_grace(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_grace)
    }
    /// Seconds, as set.
    pub fn unique_lock_ttl(&self) -> f64 {
        self.unique_lock_ttl
    }
    /// Whole seconds: `SET ... EX` rejects a fractional TTL.
    pub fn unique_lock_ttl_secs(&self) -> u64 {
        self.unique_lock_ttl.ceil() as u64
    }
    /// What periodic entries do about missed slots.
    pub fn periodic_catch_up(&self) -> CatchUp {
        self.periodic_catch_up
    }
    /// Labels shown for the process.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }
    /// Time between heartbeats.
    pub fn heartbeat_interval(&self) -> Duration {
        Duration::from_secs_f64(self.heartbeat_interval)
    }
    /// Time between moves of due jobs.
    pub fn scheduler_poll_interval(&self) -> Duration {
        Duration::from_secs_f64(self.scheduler_poll_interval)
    }
    /// Entries kept in History.
    pub fn history_max(&self) -> usize {
        self.history_max
    }
    /// Reschedules of a job over its limiters before it fails.
    pub fn over_limit_max(&self) -> u32 {
        self.over_limit_max
    }
    /// How long a job over a limiter waits in the worker for capacity
    /// before it is rescheduled.
    pub fn over_limit_wait(&self) -> Duration {
        Duration::from_secs_f64(self.over_limit_wait)
    }
    /// Most jobs kept in `dead`.
    pub fn dead_max_jobs(&self) -> usize {
        self.dead_max_jobs
    }
    /// Seconds a job stays in `dead`.
    pub fn dead_timeout_secs(&self) -> f64 {
        self.dead_timeout
    }
    /// Checks how the settings fit together (each setter checked its own
    /// value): `shard_by_queue` needs reliable fetch; `orphan_threshold` must outlast two missed heartbeats, or a
    /// live process that is late once is taken for dead and its running
    /// jobs are run a second time by another. The error names both settings.
    pub fn validate(&self) -> Result<()> {
        if self.shard_by_queue && self.fetch == FetchMode::Basic {
            return Err(Error::config(
                "fetch",
                "basic",
                "shard_by_queue needs reliable fetch (basic fetch blocks on all the queues in one command, \
                 which a cluster refuses across slots)",
            ));
        }
        if self.shard_by_queue && self.layout == Layout::Sidekiq {
            return Err(Error::config(
                "layout",
                "sidekiq",
                "cannot be used with shard_by_queue (Sidekiq's queues are keys of no hash tag, which a cluster \
                 cannot keep with the records cogworker writes beside them)",
            ));
        }
        if self.layout == Layout::Sidekiq && crate::redis_url::ClusterUrl::parse(&self.redis_url.0)?.is_some() {
            return Err(Error::config(
                "layout",
                "sidekiq",
                "cannot be used on a Redis Cluster (Sidekiq's keys carry no hash tag, so one step cannot \
                 touch a queue and the records kept beside it; Sidekiq itself does not run on a Cluster)",
            ));
        }
        let least = 2.0 * self.heartbeat_interval + ORPHAN_MARGIN_SECS;
        if self.orphan_threshold < least {
            return Err(Error::config(
                "orphan_threshold",
                self.orphan_threshold,
                format!(
                    "must be at least 2 x heartbeat_interval ({}) + {ORPHAN_MARGIN_SECS} = {least} seconds, \
                     or a live process late for one heartbeat is taken for dead",
                    self.heartbeat_interval
                ),
            ));
        }
        Ok(())
    }

    /// The Redis target with any password masked, for logs.
    pub fn redis_url_redacted(&self) -> String {
        crate::redis_url::redact_url(&self.redis_url.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_name_the_field_and_value() {
        let mut c = Config::default();
        let err = c.set_concurrency(0).unwrap_err().to_string();
        assert!(err.contains("concurrency") && err.contains('0'), "{err}");
        let err = c.set_orphan_threshold(-1.5).unwrap_err().to_string();
        assert!(err.contains("orphan_threshold") && err.contains("-1.5"), "{err}");
        let err = c.set_redis_url("mysql://x").unwrap_err().to_string();
        assert!(err.contains("redis_url") && err.contains("mysql://x"), "{err}");
        let err = "turbo".parse::<FetchMode>().unwrap_err().to_string();
        assert!(err.contains("fetch") && err.contains("turbo"), "{err}");
        assert!(c.set_queues(&["a", "a,2"]).is_err());
        assert!(c.set_queues_strict(&["a,2"]).is_err());
        c.set_queues(&["a,2", "b"]).unwrap();
        assert!(!c.strict_order());
    }

    #[test]
    fn an_orphan_threshold_must_outlast_two_heartbeats() {
        let mut c = Config::default();
        c.set_orphan_threshold(2.0).unwrap();
        let err = c.validate().unwrap_err().to_string();
        assert!(
            err.contains("orphan_threshold") && err.contains("heartbeat_interval"),
            "{err}"
        );
        c.set_heartbeat_interval(0.5).unwrap();
        c.validate().unwrap();
        assert!(Config::default().validate().is_ok());
    }

    #[test]
    fn fractional_lock_ttl_rounds_up_to_whole_seconds() {
        let mut c = Config::default();
        c.set_unique_lock_ttl(2.2).unwrap();
        assert_eq!(c.unique_lock_ttl_secs(), 3);
    }
}
