//! Pushing jobs: one at a time, in bulk (one round trip), or scheduled.
//! Validation happens before anything is written: a bad job in a bulk push
//! writes none of them.

use crate::config::Config;
use crate::connection::{Conn, Redis};
use crate::error::{Error, Result};
use crate::groups::Destination;
use crate::job::{float, now, Job};
use crate::keys::Keys;
use crate::scripts::SCRIPTS;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tracing::Instrument;

mod keyed;
mod sharded;

/// Client middleware: sees every job a push is about to write (jid,
/// `created_at` filled) and returns it, changed as it likes (a tenant id,
/// trace context, a locale), or `None` to stop that push (the push then
/// returns `None` for it). Any `Fn(Job) -> Option<Job>` is one.
pub trait ClientMiddleware: Send + Sync + 'static {
    /// The job to push, or `None` to push nothing.
    fn call(&self, job: Job) -> Option<Job>;
}

impl<F: Fn(Job) -> Option<Job> + Send + Sync + 'static> ClientMiddleware for F {
    fn call(&self, job: Job) -> Option<Job> {
        self(job)
    }
}

/// Client middleware in the order added.
#[derive(Clone, Default)]
pub(crate) struct ClientChain(Arc<[Arc<dyn ClientMiddleware>]>);

impl ClientChain {
    pub fn with(&self, middleware: Arc<dyn ClientMiddleware>) -> Self {
        let mut chain = self.0.to_vec();
        chain.push(middleware);
        ClientChain(chain.into())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `job` through every middleware, or `None` once one stops it.
    pub fn apply(&self, job: Job) -> Option<Job> {
        self.0.iter().try_fold(job, |job, middleware| middleware.call(job))
    }
}

/// Pushes jobs. Cheap to clone; all clones share one connection.
#[derive(Clone)]
pub struct Client {
    redis: Redis,
    keys: Keys,
    middleware: ClientChain,
    /// What it was made from (`cogworker bench` makes a worker of it).
    config: Arc<Config>,
    /// How many replicas its pushes wait for: the config's
    /// `min_replicas_acked`, or for one push what its jobs ask
    /// ([`Job::min_replicas_acked`]).
    replicas_wanted: u32,
}

impl Client {
    /// Needs to be called inside a tokio runtime; does not connect yet.
    pub fn new(config: &Config) -> Result<Self> {
        Ok(Client {
            redis: Redis::new(config)?,
            keys: Keys::for_config(config),
            middleware: ClientChain::default(),
            config: Arc::new(config.clone()),
            replicas_wanted: config.min_replicas_acked(),
        })
    }

    /// This client with `middleware` added after the middleware it has:
    /// every push through it (single, bulk, scheduled, unique) passes it.
    pub fn with_middleware(mut self, middleware: impl ClientMiddleware) -> Self {
        self.middleware = self.middleware.with(Arc::new(middleware));
        self
    }

    /// The key names of its namespace.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// Defines `limit` in this client's Redis (see [`crate::limiter::Limit`]) and
    /// gives the limiter that takes capacity from it.
    pub async fn limiter(&self, limit: crate::limiter::Limit) -> Result<crate::limiter::Limiter> {
        crate::limiter::Limiter::define(limit, self.redis.clone(), self.keys.clone()).await
    }

    /// This client on a connection the calling thread drives itself (see
    /// `host/lanes.rs`), and that connection; `None` where the server is
    /// not fixed or is out of that connection's reach (TLS, RESP3).
    pub(crate) fn for_calling_thread(&self) -> Option<(Client, crate::connection::ThreadConn)> {
        let (redis, conn) = self.redis.for_calling_thread()?;
        Some((Client { redis, ..self.clone() }, conn))
    }

    /// Whether [`Client::for_calling_thread`] can give one.
    pub(crate) fn reachable_directly(&self) -> bool {
        self.redis.reachable_directly()
    }

    pub(crate) fn redis(&self) -> &Redis {
        &self.redis
    }

    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// Pushes one job; returns its jid, or `None` for a unique job (see
    /// [`Job::unique_for`]) whose duplicate holds the lock. A job whose `at`
    /// is in the future goes to the schedule.
    pub async fn push(&self, job: Job) -> Result<Option<String>> {
        let mut jids = self.push_bulk(vec![job]).await?;
        Ok(jids.pop().expect("one job pushed"))
    }

    /// Pushes many jobs in one round trip (`push.lua`); returns their jids in
    /// order (`None` for a unique job refused as a duplicate). Every job is
    /// validated first: on an error nothing is written. Unique jobs take
    /// their lock and are pushed one script call each.
    ///
    /// The push runs in a `tracing` span (PRODUCER, target
    /// `cogworker::trace`); with the `opentelemetry` feature each job
    /// carries its trace context for the worker to continue.
    /// A Redis failure names the server (`redis at redis://host:6379/0: ...`).
    pub async fn push_bulk(&self, jobs: Vec<Job>) -> Result<Vec<Option<String>>> {
        self.push_counting(jobs, false).await.map_err(|e| self.naming_redis(e))
    }

    /// `error`, where Redis failed, naming the server (without credentials).
    pub(crate) fn naming_redis(&self, error: Error) -> Error {
        match error {
            Error::Redis(_) => error.at_redis(&crate::redis_url::display_target(self.config.redis_url())),
            other => other,
        }
    }

    /// [`Client::push_bulk`]; `precounted` for jobs their batches counted
    /// in already (a workflow's first step), which client middleware does
    /// not see either: like the steps after it, which the engine pushes,
    /// none may be dropped or changed.
    pub(crate) async fn push_counting(&self, mut jobs: Vec<Job>, precounted: bool) -> Result<Vec<Option<String>>> {
        // A job that asks for its own durability (a push option, taken
        // off it here) sets the replicas this push waits for: the most
        // any asks, else the client's.
        let asked = jobs.iter_mut().filter_map(Job::take_min_replicas_acked).max();
        match asked {
            Some(wanted) if wanted != self.replicas_wanted => {
                let client = Client {
                    replicas_wanted: wanted,
                    ..self.clone()
                };
                client.push_counting_as_set(jobs, precounted).await
            }
            _ => self.push_counting_as_set(jobs, precounted).await,
        }
    }

    /// [`Client::push_counting`], waiting for `replicas_wanted` replicas.
    async fn push_counting_as_set(&self, mut jobs: Vec<Job>, precounted: bool) -> Result<Vec<Option<String>>> {
        let span = crate::trace::push_span(&mut jobs);
        let jids = self.write_jobs(jobs, precounted).instrument(span.clone()).await?;
        self.confirm_replicated().await?;
        if let [Some(jid)] = jids.as_slice() {
            span.record("messaging.message.id", jid.as_str());
        }
        Ok(jids)
    }

    /// With `min_replicas_acked`, waits until that many replicas have
    /// every write this client made (`WAIT` on the connection the pushes
    /// went through: the shared one, or a host lane's own, which `conn()`
    /// is on a lane), for at most `replica_ack_timeout`; fewer is
    /// [`Error::NotReplicated`]. On a cluster, the WAIT goes where the
    /// pushes went, over the same connection to that node: the node that
    /// owns the namespace's slot, or with `shard_by_queue` (a push's writes
    /// on its queues' masters and the namespace's) every master, answering
    /// with the fewest replicas any of them confirmed.
    async fn confirm_replicated(&self) -> Result<()> {
        let wanted = self.replicas_wanted;
        if wanted == 0 {
            return Ok(());
        }
        let waited_ms = self.config.replica_ack_timeout().as_millis() as u64;
        let wait = redis::cmd("WAIT").arg(wanted).arg(waited_ms).clone();
        let acked: u32 = if self.keys.is_sharded_by_queue() {
            // The redis crate routes WAIT to every master, taking the least.
            wait.query_async(&mut self.redis.conn()).await?
        } else {
            self.redis.on_namespace_node(&wait).await?
        };
        if acked < wanted {
            return Err(Error::NotReplicated {
                acked,
                wanted,
                waited_ms,
            });
        }
        Ok(())
    }

    async fn write_jobs(&self, jobs: Vec<Job>, precounted: bool) -> Result<Vec<Option<String>>> {
        // Due times are compared with the fleet's clock (Redis's): a time
        // this host's clock made (`now()`, a delay, an `at` computed from
        // it) is moved onto it, so a skewed host schedules nothing early
        // or late.
        let offset = crate::clock::offset(&self.redis).await;
        let at = now() + offset;
        let mut jids = Vec::with_capacity(jobs.len());
        // By queue, priority level and group (and the cap declared for
        // it): each is a list of its own.
        let mut immediate: BTreeMap<crate::groups::ListOf, Vec<String>> = BTreeMap::new();
        // The priority levels the jobs use (other than the default), to
        // list where workers find them.
        let mut levels: BTreeSet<String> = BTreeSet::new();
        let mut scheduled: Vec<(f64, String)> = Vec::new();
        // `queued`/`scheduled` records of the jobs that keep their result.
        let mut statuses: Vec<(String, String, u64)> = Vec::new();
        let mut unique: Vec<(usize, Job)> = Vec::new();
        // Debounced and throttled jobs, each pushed by its own script (see
        // flow.rs).
        let mut debounced: Vec<(usize, Job)> = Vec::new();
        let mut throttled: Vec<(usize, Job)> = Vec::new();
        let mut replacing: Vec<(usize, Job)> = Vec::new();
        // Jobs joining each batch (counted into it by the push).
        let mut batches: BTreeMap<String, usize> = BTreeMap::new();
        // Sharded by queue, a batch's immediate jobs are handed over
        // (outbox.rs): counted into their batch and written to the outbox
        // in one step on the namespace's slot, then pushed onto their
        // queues' slots. (id, "<queue>\n<payload>")
        let mut handed: Vec<(String, String)> = Vec::new();
        // Of those, the ones whose group refuses a push past its backlog
        // cap, by list: checked before they are accepted (check_backlogs).
        let mut handed_capped = crate::groups::CappedLists::new();
        // Sharded, the lists pushed straight onto whose group may refuse
        // the push (pushed first, below).
        let mut refusing_lists: BTreeSet<crate::groups::ListOf> = BTreeSet::new();
        let sharded = self.keys.is_sharded_by_queue();
        for (index, mut job) in jobs.into_iter().enumerate() {
            let in_bulk = |e: crate::error::Error| {
                if index > 0 {
                    e.within(&format!("jobs[{index}]"))
                } else {
                    e
                }
            };
            job.prepare_for_push(at).map_err(in_bulk)?;
            if !self.middleware.is_empty() && !precounted {
                // What middleware returns is checked again: it may have
                // broken the job.
                let Some(changed) = self.middleware.apply(job) else {
                    jids.push(None);
                    continue;
                };
                job = changed;
                job.prepare_for_push(at).map_err(in_bulk)?;
            }
            if let Some(run_at) = job.run_at() {
                job.set("at", float(run_at + offset));
            }
            self.keys.write_created_at(&mut job);
            if let Some(bid) = job.batch_id() {
                // A unique job joins its batch in its own push's step,
                // if it is pushed (a duplicate joins nothing).
                if !precounted && job.unique_for_secs().is_none() {
                    *batches.entry(bid.to_string()).or_default() += 1;
                }
            }
            jids.push(Some(job.jid_str().to_string()));
            if job.priority_level() != crate::priority::DEFAULT {
                levels.insert(crate::priority::member(job.queue_name(), job.priority_level()));
            }
            if sharded {
                // Listed with the levels, on the namespace's slot: the
                // push onto the group's list cannot reach the registry.
                levels.extend(crate::groups::members_for(&job));
            }
            if job.unique_for_secs().is_some() {
                unique.push((index, job));
                continue;
            }
            if job.debounce_secs().is_some() {
                debounced.push((index, job));
                continue;
            }
            if job.throttle_secs().is_some() || job.replaces() {
                self.keys.stamp_enqueued(&mut job, at);
                match job.replaces() {
                    true => replacing.push((index, job)),
                    false => throttled.push((index, job)),
                }
                continue;
            }
            // Unique jobs and flow pushes (whose script decides the jid
            // that runs) write theirs in their own script, above.
            if let Some(ttl) = job.result_ttl_secs() {
                let (record, ttl) = crate::results::pushed(&job, at, ttl);
                statuses.push((self.keys.result(job.jid_str()), record, ttl));
            }
            match job.run_at() {
                Some(run_at) if run_at > at => {
                    crate::sidekiq::as_scheduled(&mut job, self.keys.is_sidekiq());
                    scheduled.push((run_at, job.to_json()))
                }
                _ => {
                    self.keys.stamp_enqueued(&mut job, at);
                    if sharded && job.batch_id().is_some() {
                        let id = crate::outbox::handover_id(job.jid_str());
                        handed.push((id, format!("{}\n{}", job.queue_name(), job.to_json())));
                        if let Some((list, most, group)) = crate::groups::refusing_backlog(&self.keys, &job) {
                            handed_capped.entry(list).or_insert((most, group, 0)).2 += 1;
                        }
                        continue;
                    }
                    let list = crate::groups::list_of(&job);
                    if sharded && matches!(job.declared_backlog(), Some((_, false))) {
                        refusing_lists.insert(list.clone());
                    }
                    immediate.entry(list).or_default().push(job.to_json());
                }
            }
        }
        for (index, job) in unique {
            // A singleton's duplicate answers with the jid of the job that
            // holds its key; any other unique job's, with none.
            let keyed = job.flow_key().is_some();
            if let Some(holder) = self.push_unique(job, at).await? {
                jids[index] = keyed.then_some(holder);
            }
        }
        for (index, job) in debounced {
            jids[index] = Some(self.push_debounced(&job, at).await?);
        }
        for (index, job) in replacing {
            jids[index] = Some(self.push_replacing(&job, at).await?);
        }
        for (index, job) in throttled {
            if !self.push_throttled(&job, at).await? {
                jids[index] = None;
            }
        }
        if immediate.is_empty() && scheduled.is_empty() && handed.is_empty() {
            return Ok(jids);
        }
        self.check_backlogs(&handed_capped).await?;
        if sharded && !immediate.is_empty() {
            // Named first, so a queued job is always in a listed queue.
            let names: BTreeSet<&String> = immediate.keys().map(|(queue, ..)| queue).collect();
            let _: i64 = self
                .retry_once_on_drop(|mut conn| {
                    let (key, names) = (self.keys.queues(), &names);
                    async move { redis::AsyncCommands::sadd(&mut conn, key, names).await }
                })
                .await?;
        }
        // Sharded, each queue is pushed onto its own slot after the rest.
        let (on_this_slot, immediate_sharded) = if sharded {
            (BTreeMap::new(), immediate)
        } else {
            (immediate, BTreeMap::new())
        };
        let mut invocation = SCRIPTS.push.prepare_invoke();
        invocation
            .key(self.keys.queues())
            .key(self.keys.schedule())
            .key(self.keys.priorities());
        let destinations: Vec<Destination> = on_this_slot
            .keys()
            .map(|(queue, level, group, limits)| {
                Destination::of(&self.keys, queue, *level, group.as_deref(), limits.as_deref())
            })
            .collect();
        for destination in &destinations {
            invocation.key(&destination.list);
        }
        for (key, _, _) in &statuses {
            invocation.key(key);
        }
        invocation
            .key(self.keys.stat("backlog_dropped", None))
            .key(self.keys.stat("backlog_dropped", Some(&crate::retry::day_of(at))));
        invocation
            .arg(self.keys.wake())
            .arg(on_this_slot.len())
            .arg(scheduled.len())
            .arg(statuses.len())
            .arg(levels.len())
            .arg(batches.len());
        if !batches.is_empty() {
            invocation.arg(self.keys.batch_prefix());
            for (bid, joining) in &batches {
                invocation.arg(bid).arg(*joining);
            }
        }
        for member in &levels {
            invocation.arg(member);
        }
        for (((queue, ..), payloads), destination) in on_this_slot.iter().zip(&destinations) {
            invocation
                .arg(queue)
                .arg(&destination.group_args()[..])
                .arg(payloads.len())
                .arg(payloads);
        }
        for (score, payload) in &scheduled {
            invocation.arg(*score).arg(payload);
        }
        for (_, record, ttl) in &statuses {
            invocation.arg(*ttl).arg(record);
        }
        if !handed.is_empty() {
            invocation.key(self.keys.outbox()).arg(handed.len());
            for (id, entry) in &handed {
                invocation.arg(id).arg(entry);
            }
        }
        // At worst a push whose reply was lost is pushed twice, which
        // at-least-once delivery allows; a push must never be lost.
        // (Sharded by queue, the levels are listed here, on the
        // namespace's slot, before the jobs are pushed onto their queues.)
        if !on_this_slot.is_empty()
            || !scheduled.is_empty()
            || !statuses.is_empty()
            || !levels.is_empty()
            || !handed.is_empty()
        {
            let _: usize = self
                .invoke_once_more_on_drop(&invocation)
                .await
                .map_err(crate::error::Error::from_batch_script)?;
        }
        if !handed.is_empty() {
            // Counted and in the outbox: should this fail, recovery
            // pushes them (the push is done either way).
            let ids: Vec<String> = handed.into_iter().map(|(id, _)| id).collect();
            if let Err(e) = crate::outbox::deliver(&self.redis, &self.keys, &ids).await {
                tracing::warn!(
                    "pushing {} job(s) of a batch onto their queues failed; recovery pushes them: {e}",
                    ids.len()
                );
            }
        }
        if sharded {
            // The lists whose group may refuse the push (a backlog cap)
            // first: a refusal then comes before any other queue's jobs
            // are pushed (each queue is a step of its own).
            let (first, rest): (Vec<_>, Vec<_>) = immediate_sharded
                .iter()
                .partition(|(list, _)| refusing_lists.contains(*list));
            for ((queue, level, group, limits), payloads) in first.into_iter().chain(rest) {
                match group {
                    Some(group) => {
                        let destination = Destination::of(&self.keys, queue, *level, Some(group), limits.as_deref());
                        let pushed = self.push_into_group_on_own_slot(queue, &destination, payloads).await;
                        if pushed.is_err() && !statuses.is_empty() {
                            self.forget_records(payloads).await;
                        }
                        pushed?
                    }
                    None => self.push_onto_own_slot(queue, *level, payloads).await?,
                }
            }
        }
        Ok(jids)
    }

    /// Runs a push's script ([`Client::retry_once_on_drop`]).
    async fn invoke_once_more_on_drop<T: redis::FromRedisValue>(
        &self,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> redis::RedisResult<T> {
        self.retry_once_on_drop(|mut conn| async move { invocation.invoke_async(&mut conn).await })
            .await
    }

    /// Runs `send` on the shared connection, and once more if the connection
    /// had died since the last call: a dead connection fails the first
    /// command sent on it while the shared connection reconnects behind it.
    async fn retry_once_on_drop<T, F, Fut>(&self, send: F) -> redis::RedisResult<T>
    where
        F: Fn(Conn) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        // A durable push's WAIT answers for the writes of its own
        // connection only: every push then goes through the shared one,
        // where the WAIT follows it (see confirm_replicated).
        let conn = || match self.replicas_wanted {
            0 => self.redis.conn_for_push(),
            _ => self.redis.conn(),
        };
        match send(conn()).await {
            Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                tracing::warn!("push failed ({e}); retrying once on a new connection");
                send(conn()).await
            }
            other => other,
        }
    }
}
