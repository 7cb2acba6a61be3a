//! The host conformance suite (`tests/conformance/scenarios.json`), run
//! against the Rust API: the same scenarios run in Python
//! (`python/tests/test_conformance.py`) and Ruby
//! (`ruby/test/test_conformance.rb`). Scenarios for other hosts only
//! (testing modes) are skipped; a step about a value Rust's types cannot
//! hold (`$not_json`) too.

mod common;

use cogworker::host::HostValue;
use cogworker::{Api, Client, Config, Failure, Job, JobOutcome, Periodic, Retry, Worker, WorkerEvent, WorkerHandle};
use common::*;
use futures_util::StreamExt as _;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SCENARIOS: &str = include_str!("../../tests/conformance/scenarios.json");

type Calls = Arc<Mutex<Vec<Value>>>;

struct Run {
    redis: TestRedis,
    config: Config,
    client: Client,
    api: Api,
    jids: HashMap<String, String>,
    trail: Arc<Mutex<Vec<String>>>,
    calls: Calls,
    scenario: Value,
    worker: Option<(WorkerHandle, tokio::task::JoinHandle<cogworker::Result<()>>)>,
}

fn last_segment(name: &str) -> &str {
    name.rsplit(['.', ':']).next().unwrap_or(name)
}

fn host_value(value: &Value) -> HostValue {
    match value {
        Value::Null => HostValue::Null,
        Value::Bool(b) => HostValue::Bool(*b),
        Value::Number(n) => n
            .as_i64()
            .map(HostValue::Int)
            .unwrap_or(HostValue::Float(n.as_f64().unwrap())),
        Value::String(s) => HostValue::Text(s.clone()),
        Value::Array(items) => HostValue::List(items.iter().map(host_value).collect()),
        Value::Object(map) => HostValue::Map(
            map.iter()
                .map(|(k, v)| (HostValue::Text(k.clone()), host_value(v)))
                .collect(),
        ),
    }
}

/// Server middleware that appends `<name>:before` and `<name>:after`.
struct TrailMiddleware {
    name: String,
    trail: Arc<Mutex<Vec<String>>>,
}

impl cogworker::Middleware for TrailMiddleware {
    fn call(
        &self,
        job: Job,
        next: cogworker::Next,
    ) -> futures_util::future::BoxFuture<'static, cogworker::HandlerResult> {
        let (name, trail) = (self.name.clone(), self.trail.clone());
        Box::pin(async move {
            trail.lock().unwrap().push(format!("{name}:before"));
            let outcome = next.run(job).await;
            trail.lock().unwrap().push(format!("{name}:after"));
            outcome
        })
    }
}

/// Skips a job whose args are `["skip"]`, makes `["change", x]` into
/// `[x + "!"]`, and swallows a `ConformanceError`.
struct GateMiddleware;

impl cogworker::Middleware for GateMiddleware {
    fn call(
        &self,
        job: Job,
        next: cogworker::Next,
    ) -> futures_util::future::BoxFuture<'static, cogworker::HandlerResult> {
        Box::pin(async move {
            let args = job.args_slice().to_vec();
            if args == [json!("skip")] {
                return Ok(None);
            }
            let job = match args.as_slice() {
                [first, changed] if first == "change" => {
                    let changed = format!("{}!", changed.as_str().unwrap_or(""));
                    let mut fields = job.into_value();
                    fields["args"] = json!([changed]);
                    Job::from_value(fields).unwrap()
                }
                _ => job,
            };
            match next.run(job).await {
                Err(failure) if failure.class == "ConformanceError" => Ok(None),
                outcome => outcome,
            }
        })
    }
}

impl Run {
    /// `batch` with the scenario's `callbacks` (`[{event, class, args,
    /// options, as}]`), each callback's jid bound to its `as`.
    fn with_callbacks(&mut self, mut batch: cogworker::Batch, callbacks: &Value) -> cogworker::Batch {
        for callback in callbacks.as_array().into_iter().flatten() {
            let jid = cogworker::new_jid();
            let mut job = Job::new(callback["class"].as_str().unwrap())
                .args(callback["args"].as_array().cloned().unwrap_or_default())
                .jid(jid.as_str());
            if let Some(ttl) = callback["options"]["result_ttl"].as_f64() {
                job = job.result_ttl(ttl);
            }
            let event = cogworker::BatchEvent::parse(callback["event"].as_str().unwrap()).unwrap();
            batch = batch.on(event, job);
            self.jids.insert(callback["as"].as_str().unwrap().into(), jid);
        }
        batch
    }

    /// With `own` hooks, the worker's builder gets those (a registry of its
    /// own); otherwise the scenario's ("process").
    fn start_worker(&mut self, own: Option<Vec<String>>) {
        let (trail, grower) = (self.trail.clone(), self.client.clone());
        let mut builder = Worker::builder(self.config.clone())
            .register_returning("ConformanceEcho", |job| {
                let args = job.args_slice().to_vec();
                async move { Ok(Value::Array(args)) }
            })
            .register("ConformanceBoom", |_job| async {
                Err(Failure::new("ConformanceError", "boom"))
            })
            .retry_in("ConformanceBoom", |_count, _job| Some(3600.0))
            .register_returning("ConformanceLong", |job| async move {
                let running = cogworker::Running::current().expect("run by a worker");
                if job.args_slice()[0] == "steps" {
                    for percent in [25.0, 50.0, 75.0] {
                        running.progress(Some(percent), None, None).unwrap();
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    return Ok(json!("stepped"));
                }
                let Some(cursor) = running.cursor() else {
                    let fail = |e: cogworker::Error| Failure::new("Error", e.to_string());
                    running
                        .progress(Some(50.0), Some("half"), Some(json!({"step": 1})))
                        .map_err(fail)?;
                    running.checkpoint(json!({"at": 1})).map_err(fail)?;
                    if job.args_slice()[0] == "interrupt" {
                        running.interrupt();
                    }
                    return Ok(Value::Null);
                };
                Ok(json!({"cursor": cursor, "stopping": running.stopping()}))
            })
            .register("ConformanceSlow", |job| {
                let seconds = job.args_slice()[0].as_f64().unwrap_or(0.0);
                async move {
                    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                    Ok(())
                }
            })
            .register("ConformanceGrow", move |job| {
                // Adds a ConformanceEcho of its args to its own batch.
                let (client, args) = (grower.clone(), job.args_slice().to_vec());
                let bid = job.batch_id().expect("a job of a batch").to_string();
                async move {
                    let echo = Job::new("ConformanceEcho").args(args);
                    client
                        .batch(&bid)
                        .push(echo)
                        .await
                        .map_err(|e| Failure::new("Error", e.to_string()))?;
                    Ok(())
                }
            })
            .register("ConformanceIterate", {
                let trail = self.trail.clone();
                move |job| {
                    let trail = trail.clone();
                    async move {
                        let running = cogworker::Running::current().expect("run by a worker");
                        let count = job.args_slice()[0].as_u64().unwrap();
                        let start = running.cursor().and_then(|c| c.as_u64());
                        trail
                            .lock()
                            .unwrap()
                            .push(if start.is_none() { "start" } else { "resume" }.into());
                        let items = futures_util::stream::iter(start.unwrap_or(0)..count).map(|i| (i, json!(i + 1)));
                        let most = Some(Duration::from_secs_f64(0.1));
                        running
                            .iterate(items, most, |i| {
                                let trail = trail.clone();
                                async move {
                                    tokio::time::sleep(Duration::from_millis(200)).await;
                                    trail.lock().unwrap().push(format!("item:{i}"));
                                    Ok::<(), Failure>(())
                                }
                            })
                            .await?;
                        Ok(())
                    }
                }
            })
            .register("ConformanceTrail", move |_job| {
                trail.lock().unwrap().push("handler".into());
                async { Ok(()) }
            });
        for name in self.scenario["server_middleware"].as_array().into_iter().flatten() {
            builder = match name.as_str().unwrap() {
                "gate" => builder.middleware(Arc::new(GateMiddleware)),
                name => builder.middleware(Arc::new(TrailMiddleware {
                    name: name.to_string(),
                    trail: self.trail.clone(),
                })),
            };
        }
        let scenario_hooks = || {
            let names = self.scenario["hooks"].as_array().into_iter().flatten();
            names.filter_map(Value::as_str).map(String::from).collect::<Vec<_>>()
        };
        let (hooks, registry) = match own {
            Some(own) => (own, "own"),
            None => (scenario_hooks(), "process"),
        };
        if hooks.iter().any(|h| h == "error") {
            let calls = self.calls.clone();
            builder = builder.on_error(move |job, failure| {
                let seen = json!({"hook": "error", "jid": job.jid_str(), "class": job.class(),
                    "error_class": failure.class, "error_message": failure.message,
                    "raised_class": failure.class, "registry": registry});
                calls.lock().unwrap().push(seen);
            });
        }
        if hooks.iter().any(|h| h == "death") {
            let calls = self.calls.clone();
            builder = builder.on_event(move |event| {
                if let WorkerEvent::Died { job } = event {
                    let seen = json!({"hook": "death", "jid": job["jid"], "class": job["class"],
                        "error_class": job["error_class"], "error_message": job["error_message"],
                        "raised_class": job["error_class"], "registry": registry});
                    calls.lock().unwrap().push(seen);
                }
            });
        }
        let worker = builder.build().unwrap();
        let handle = worker.handle();
        self.worker = Some((handle, tokio::spawn(worker.run())));
    }

    fn push_job(step: &Value) -> Job {
        let args = step["args"].as_array().cloned().unwrap_or_default();
        let mut job = Job::new(step["push"].as_str().unwrap()).args(args);
        let options = &step["options"];
        if let Some(ttl) = options["result_ttl"].as_f64() {
            job = job.result_ttl(ttl);
        }
        if let Some(seconds) = options["unique_for"].as_f64() {
            job = job.unique_for(seconds);
        }
        if let Some(max) = options["retry"].as_u64() {
            job = job.retry(Retry::Max(max as u32));
        }
        if let Some(seconds) = options["timeout"].as_f64() {
            job = job.timeout(seconds);
        }
        if let Some(group) = options["group"].as_str() {
            job = job.group(group);
        }
        if let Some(cap) = options["group_cap"].as_u64() {
            job = job.group_cap(cap);
        }
        if let Some(most) = options["group_backlog"].as_u64() {
            job = job.group_backlog(most, options["group_backlog_full"] == "drop_oldest");
        }
        if let Some(limit) = options["group_rate"].as_u64() {
            job = job.group_rate(limit, options["group_rate_period"].as_f64().unwrap_or(1.0));
        }
        if let Some(key) = options["key"].as_str() {
            job = job.key(key);
        }
        if let Some(window) = options["debounce"].as_f64() {
            job = job.debounce(window, options["debounce_max"].as_f64());
        }
        if options["sequence"] == true {
            job = job.sequence();
        }
        if options["replace"] == true {
            job = job.replace();
        }
        if let Some(window) = options["throttle"].as_f64() {
            job = job.throttle(window, options["throttle_excess"] == "drop");
        }
        if let Some(cursor) = options.get("cursor") {
            job = job.with_cursor(cursor.clone());
        }
        if let Some(replicas) = options["min_replicas_acked"].as_u64() {
            job = job.min_replicas_acked(replicas as u32);
        }
        for name in options.as_object().into_iter().flat_map(|o| o.keys()) {
            let known = [
                "result_ttl",
                "unique_for",
                "retry",
                "timeout",
                "group",
                "group_cap",
                "group_rate",
                "group_rate_period",
                "group_backlog",
                "group_backlog_full",
                "key",
                "debounce",
                "debounce_max",
                "throttle",
                "throttle_excess",
                "replace",
                "sequence",
                "cursor",
                "min_replicas_acked",
            ];
            assert!(
                known.contains(&name.as_str()),
                "the Rust runner takes no push option {name}"
            );
        }
        job
    }

    /// A job with one option set to a scenario's value: through the
    /// builder where Rust's types hold the value (a number, or a float JSON
    /// cannot hold: `{"$float": "nan"}`), as a raw field otherwise.
    fn job_with_option(class: &str, option: &str, value: &Value) -> Job {
        let job = Job::new(class);
        let value = &repeated(value);
        let number = match value.get("$float").and_then(Value::as_str) {
            Some(text) => Some(text.parse::<f64>().unwrap()),
            None => value.as_f64().filter(|_| value.is_number()),
        };
        match (option, number) {
            ("timeout", Some(n)) => job.timeout(n),
            ("unique_for", Some(n)) => job.unique_for(n),
            ("result_ttl", Some(n)) => job.result_ttl(n),
            ("expires_in", Some(n)) => job.expires_in(n),
            ("expires_at", Some(n)) => job.expires_at(n),
            ("at", Some(n)) => job.at(n),
            // Rust's builder turns a delay into `at`, which the error names.
            ("delay", Some(n)) => job.delay(n),
            ("delay", None) => job.field("at", value.clone()),
            _ => job.field(option, value.clone()),
        }
    }

    async fn step(&mut self, step: &Value) {
        let jid = |key: &str| self.jids[step[key].as_str().unwrap()].clone();
        if let Some(class) = step.get("push_each") {
            for (option, values) in step["options"].as_object().unwrap() {
                for value in values.as_array().unwrap() {
                    let job = Self::job_with_option(class.as_str().unwrap(), option, value);
                    let refused = self
                        .client
                        .push(job)
                        .await
                        .expect_err(&format!("{option} = {value} refused"));
                    assert!(
                        matches!(refused, cogworker::Error::InvalidJob { .. }),
                        "{option} = {value}: {refused:?}"
                    );
                    let named = if option == "delay" { "at" } else { option.as_str() };
                    assert!(refused.to_string().contains(named), "{option} = {value}: {refused}");
                }
            }
        } else if let Some(payload) = step.get("push_raw") {
            let mut payload = payload.clone();
            let jid = cogworker::new_jid();
            payload["jid"] = json!(jid);
            let queue = payload["queue"].as_str().unwrap_or("default").to_string();
            let _: () = redis::cmd("LPUSH")
                .arg(format!("cogworker:queue:{queue}"))
                .arg(payload.to_string())
                .query(&mut self.redis.sync_conn())
                .unwrap();
            self.jids.insert(step["as"].as_str().unwrap().into(), jid);
        } else if step.get("await_buried").is_some() {
            let (jid, naming) = (jid("await_buried"), format!("`{}`", step["naming"].as_str().unwrap()));
            let api = self.api.clone();
            wait_until(
                &format!("{jid} buried naming {naming}"),
                Duration::from_secs(15),
                || {
                    let (api, jid, naming) = (api.clone(), jid.clone(), naming.clone());
                    async move {
                        let entries = api.set_page(cogworker::JobSet::Dead, 0, 1000).await.unwrap();
                        entries.iter().any(|entry| {
                            let job: Value = serde_json::from_slice(&entry.raw).unwrap();
                            job["raw_payload"].as_str().is_some_and(|raw| raw.contains(&jid))
                                && job["error_message"].as_str().is_some_and(|m| m.contains(&naming))
                        })
                    }
                },
            )
            .await;
        } else if step.get("push").is_some() && step.get("raises").is_some() {
            let error = self.client.push(Self::push_job(step)).await.unwrap_err();
            let kind = match &error {
                cogworker::Error::OverLimit { .. } => "OverLimit",
                cogworker::Error::NotReplicated { .. } => "NotReplicated",
                cogworker::Error::InvalidJob { .. } => "InvalidJob",
                cogworker::Error::InvalidArgument { .. } => "InvalidArgument",
                _ => "another error",
            };
            assert_eq!(step["raises"], kind, "{error}");
            let wanted = step["message_has"].as_str().unwrap_or("");
            assert!(error.to_string().contains(wanted), "{error}");
        } else if step.get("push").is_some() {
            let pushed = self.client.push(Self::push_job(step)).await.unwrap();
            if step["refused"] == json!(true) {
                assert_eq!(pushed, None, "the push was refused");
            } else if let Some(name) = step["as"].as_str() {
                self.jids.insert(name.into(), pushed.expect("pushed"));
            }
        } else if let Some(description) = step.get("batch") {
            let batch = self.with_callbacks(cogworker::Batch::new(description.as_str().unwrap()), &step["on"]);
            let open = self.client.open_batch(batch).await.unwrap();
            for inner in step["jobs"].as_array().unwrap() {
                let jid = open.push(Self::push_job(inner)).await.unwrap().expect("pushed");
                self.jids.insert(inner["as"].as_str().unwrap().into(), jid);
            }
            open.close().await.unwrap();
            self.jids
                .insert(step["as"].as_str().unwrap().into(), open.bid().to_string());
        } else if let Some(description) = step.get("workflow") {
            let built = |spec: &Value| {
                let job = |spec: &Value| {
                    let mut job = Job::new(spec["step"].as_str().unwrap())
                        .args(spec["args"].as_array().cloned().unwrap_or_default());
                    if let Some(ttl) = spec["options"]["result_ttl"].as_f64() {
                        job = job.result_ttl(ttl);
                    }
                    if let Some(retry) = spec["options"].get("retry") {
                        job = job.field("retry", retry.clone());
                    }
                    job
                };
                let step = match spec["group"].as_array() {
                    Some(members) => cogworker::Step::group(members.iter().map(job)),
                    None => cogworker::Step::job(job(spec)),
                };
                if spec["takes_result"] == true {
                    step.taking_result()
                } else {
                    step
                }
            };
            let specs = step["steps"].as_array().unwrap();
            let job = |spec: &Value| {
                Job::new(spec["step"].as_str().unwrap()).args(spec["args"].as_array().cloned().unwrap_or_default())
            };
            let workflow = match step["shape"].as_str() {
                Some("chain") => cogworker::Workflow::chain(specs.iter().map(job)),
                Some("chord") => cogworker::Workflow::chord(specs.iter().map(job), {
                    let callback = job(&step["callback"]);
                    match step["callback"]["options"]["result_ttl"].as_f64() {
                        Some(ttl) => callback.result_ttl(ttl),
                        None => callback,
                    }
                }),
                _ => {
                    let mut empty = match description.as_str() {
                        Some(description) => cogworker::Workflow::new(description),
                        None => cogworker::Workflow::default(),
                    };
                    if step.get("on").is_some() {
                        let whole = cogworker::Batch::new(description.as_str().unwrap_or("workflow"));
                        empty = empty.batch(self.with_callbacks(whole, &step["on"]));
                    }
                    specs.iter().fold(empty, |w, spec| w.then(built(spec)))
                }
            };
            let pushed = self.client.push_workflow(workflow).await.unwrap();
            if let Some(name) = step["callback"]["as"].as_str() {
                self.jids
                    .insert(name.into(), pushed.steps.last().unwrap().jids[0].clone());
            }
            for (spec, pushed_step) in specs.iter().zip(&pushed.steps) {
                if let Some(name) = spec["as"].as_str() {
                    self.jids.insert(name.into(), pushed_step.jids[0].clone());
                }
            }
            self.jids.insert(step["as"].as_str().unwrap().into(), pushed.id);
        } else if step.get("workflow_refused").is_some() {
            // A group of steps taking a result cannot be written in Rust:
            // Step::group takes jobs.
        } else if let Some(event) = step["batch_on_refused"].as_str() {
            let refused = cogworker::BatchEvent::parse(event).unwrap_err();
            assert!(
                refused.to_string().contains(step["message_has"].as_str().unwrap()),
                "{refused}"
            );
        } else if step.get("batch_status").is_some() {
            let status = self.api.batch(&jid("batch_status")).await.unwrap().unwrap().to_json();
            for (field, wanted) in step["has"].as_object().unwrap() {
                assert_eq!(&status[field], wanted, "{field} of {status}");
            }
        } else if step.get("callback_result").is_some() {
            let JobOutcome::Succeeded(Value::Array(value)) =
                self.api.outcome(&jid("callback_result"), None).await.unwrap()
            else {
                panic!("the callback kept no list")
            };
            for (field, wanted) in step["status_has"].as_object().unwrap() {
                assert_eq!(&value[0][field], wanted, "{field} of {}", value[0]);
            }
            assert_eq!(&json!(value[1..]), &step["args"]);
        } else if let Some(start) = step.get("start_worker") {
            let own = start["hooks"]
                .as_array()
                .map(|h| h.iter().filter_map(|n| n.as_str().map(String::from)).collect());
            self.start_worker(own);
        } else if let Some(absent) = step.get("expect_no_hooks") {
            let calls = self.calls.lock().unwrap();
            let found: Vec<_> = calls.iter().filter(|c| c["registry"] == absent["registry"]).collect();
            assert!(found.is_empty(), "{found:?}");
        } else if step.get("await_status").is_some() {
            let (jid, wanted) = (jid("await_status"), step["is"].as_str().unwrap().to_string());
            let api = self.api.clone();
            wait_until(&format!("{jid} {wanted}"), Duration::from_secs(15), || {
                let (api, jid, wanted) = (api.clone(), jid.clone(), wanted.clone());
                async move { api.status(&jid).await.unwrap() == wanted }
            })
            .await;
        } else if step.get("watch").is_some() {
            let seconds = Duration::from_secs_f64(step["seconds"].as_f64().unwrap());
            let (events, percents) = watched(&self.api, &jid("watch"), seconds).await;
            assert!(percents.windows(2).all(|pair| pair[0] <= pair[1]), "{events:?}");
            assert_eq!(percents.last(), step["last_percent"].as_f64().as_ref(), "{events:?}");
            let Some(cogworker::WatchEvent::Finished(end)) = events.last() else {
                panic!("ends with finished: {events:?}")
            };
            for (field, wanted) in step["finished_has"].as_object().unwrap() {
                assert_eq!(&end[field], wanted, "{field} of {end}");
            }
        } else if step.get("progress").is_some() {
            // Written at most 250 ms after it was made.
            let (api, jid, wanted) = (self.api.clone(), jid("progress"), step["has"].clone());
            wait_until(&format!("{jid}'s report"), Duration::from_secs(15), || {
                let (api, jid, wanted) = (api.clone(), jid.clone(), wanted.clone());
                async move {
                    let report = api.progress(&jid).await.unwrap().unwrap_or_default();
                    wanted
                        .as_object()
                        .unwrap()
                        .iter()
                        .all(|(field, value)| &report[field] == value)
                }
            })
            .await;
        } else if step.get("status").is_some() {
            assert_eq!(
                self.api.status(&jid("status")).await.unwrap(),
                step["is"].as_str().unwrap()
            );
        } else if step.get("result").is_some() {
            let jid = jid("result");
            let started = std::time::Instant::now();
            let outcome = self.api.outcome(&jid, step["wait"].as_f64()).await.unwrap();
            let within = step["within"].as_f64().unwrap_or(600.0);
            assert!(started.elapsed().as_secs_f64() < within, "answered late");
            if let Some(expected) = step.get("failed") {
                let JobOutcome::Failed(record) = outcome else {
                    panic!("not failed: {outcome:?}")
                };
                assert_eq!(record["jid"], json!(jid));
                assert_eq!(record["status"], expected["status"]);
                assert_eq!(
                    last_segment(record["error_class"].as_str().unwrap()),
                    expected["error_class"]
                );
                assert_eq!(record["error_message"], expected["error_message"]);
            } else if let Some(status) = step.get("pending") {
                assert_eq!(outcome, JobOutcome::Pending(status.as_str().unwrap().into()));
            } else {
                assert_eq!(outcome, JobOutcome::Succeeded(step["value"].clone()));
            }
        } else if let Some(expected) = step.get("await_hooks") {
            for wanted in expected.as_array().unwrap() {
                let mut wanted = wanted.clone();
                wanted["jid"] = json!(self.jids[wanted["jid"].as_str().unwrap()]);
                let calls = self.calls.clone();
                wait_until(&format!("hook call {wanted}"), Duration::from_secs(15), || {
                    let (calls, wanted) = (calls.clone(), wanted.clone());
                    async move {
                        calls.lock().unwrap().iter().any(|call| {
                            wanted.as_object().unwrap().iter().all(|(k, v)| match k.as_str() {
                                "error_class" | "raised_class" => call[k].as_str().map(last_segment) == v.as_str(),
                                _ => &call[k] == v,
                            })
                        })
                    }
                })
                .await;
            }
        } else if step.get("cancel").is_some() {
            assert_eq!(
                self.api.cancel(&jid("cancel")).await.unwrap(),
                step["answers"].as_str().unwrap()
            );
        } else if let (Some(name), Some(args)) = (step["api_call"].as_str(), step["args"].as_array()) {
            // A call by name with JSON arguments, as both hosts' Api make it.
            let answer = cogworker::host::api_calls::call(&self.api, name, args.clone()).await;
            match step.get("raises") {
                Some(raises) => {
                    let error = answer.expect_err(&format!("{name} refused"));
                    assert_eq!(raises, "InvalidArgument", "the Rust runner checks InvalidArgument only");
                    assert!(matches!(error, cogworker::Error::InvalidArgument { .. }), "{error:?}");
                    assert!(
                        error.to_string().contains(step["message_has"].as_str().unwrap_or("")),
                        "{error}"
                    );
                }
                None => assert_eq!(answer.unwrap(), step["is"], "{name}"),
            }
        } else if step["api_call"] == "stats" && step.get("has").is_some() {
            let stats = serde_json::to_value(self.api.stats().await.unwrap()).unwrap();
            for (field, wanted) in step["has"].as_object().unwrap() {
                assert_eq!(&stats[field], wanted, "{field} of {stats}");
            }
        } else if let Some(class) = step["push_later"].as_str() {
            let job = Job::new(class).args(step["args"].as_array().cloned().unwrap_or_default());
            let job = match step["in"].as_f64() {
                Some(seconds) => job.delay(seconds),
                None => job.at(cogworker::now() + step["at_from_now"].as_f64().unwrap()),
            };
            let jid = self.client.push(job).await.unwrap().expect("pushed");
            self.jids.insert(step["as"].as_str().unwrap().into(), jid);
        } else if step.get("await_scheduled").is_some() {
            let (api, jid) = (self.api.clone(), jid("await_scheduled"));
            let (low, high) = (
                step["in_seconds"][0].as_f64().unwrap(),
                step["in_seconds"][1].as_f64().unwrap(),
            );
            wait_until(&format!("{jid} scheduled"), Duration::from_secs(15), || {
                let (api, jid) = (api.clone(), jid.clone());
                async move {
                    let Some(entry) = api.find_in_set(cogworker::JobSet::Scheduled, &jid).await.unwrap() else {
                        return false;
                    };
                    let due_in = entry.score - cogworker::now();
                    assert!((low..=high).contains(&due_in), "{jid} due in {due_in}s");
                    if let Some(args) = step.get("args") {
                        let job: Value = serde_json::from_slice(&entry.raw).unwrap();
                        assert_eq!(&job["args"], args, "{job}");
                    }
                    true
                }
            })
            .await;
        } else if let Some(names) = step["same_jid"].as_array() {
            let jids: std::collections::BTreeSet<&String> =
                names.iter().map(|name| &self.jids[name.as_str().unwrap()]).collect();
            assert_eq!(jids.len(), 1, "{:?}", self.jids);
        } else if let Some(queue) = step["await_queued"].as_str() {
            let (api, queue) = (self.api.clone(), queue.to_string());
            let (class, args, has) = (step["class"].clone(), step["args"].clone(), step["has"].clone());
            let lacks = step["lacks"].as_str().map(str::to_string);
            wait_until(&format!("a {class} job on {queue}"), Duration::from_secs(15), || {
                let (api, queue, class, args, has, lacks) = (
                    api.clone(),
                    queue.clone(),
                    class.clone(),
                    args.clone(),
                    has.clone(),
                    lacks.clone(),
                );
                async move {
                    let raw = api.queue_jobs(&queue, 0, 1000).await.unwrap();
                    let jobs: Vec<Value> = raw.iter().map(|r| serde_json::from_slice(r).unwrap()).collect();
                    let found: Vec<&Value> = jobs
                        .iter()
                        .filter(|j| j["class"] == class && j["args"] == args)
                        .collect();
                    let stamped = |job: &&Value| {
                        has.as_object().into_iter().flatten().all(|(k, v)| &job[k] == v)
                            && lacks.as_deref().is_none_or(|field| job.get(field).is_none())
                    };
                    !found.is_empty() && found.iter().all(stamped)
                }
            })
            .await;
        } else if let Some(queue) = step["await_queue_size"].as_str() {
            let (api, queue, wanted) = (self.api.clone(), queue.to_string(), step["is"].as_u64().unwrap());
            wait_until(&format!("{wanted} jobs on {queue}"), Duration::from_secs(15), || {
                let (api, queue) = (api.clone(), queue.clone());
                async move { api.queue(&queue).await.unwrap().size == wanted }
            })
            .await;
        } else if let Some(expected) = step.get("expect_trail") {
            // Awaited: a handler may still be writing its last entry.
            let (trail, wanted) = (self.trail.clone(), expected.clone());
            let reached = tokio::time::timeout(Duration::from_secs(15), async {
                while json!(*trail.lock().unwrap()) != wanted {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await;
            if reached.is_err() {
                assert_eq!(&json!(*self.trail.lock().unwrap()), expected);
            }
        } else if let Some(spec) = step.get("expect_connections") {
            let mut counter = self.redis.sync_conn();
            let received = |conn: &mut redis::Connection| -> u64 {
                let info: String = redis::cmd("INFO").arg("stats").query(conn).unwrap();
                let line = info
                    .lines()
                    .find(|l| l.starts_with("total_connections_received:"))
                    .unwrap();
                line.split(':').nth(1).unwrap().trim().parse().unwrap()
            };
            let before = received(&mut counter);
            for inner in spec["during"].as_array().unwrap() {
                Box::pin(self.step(inner)).await;
            }
            let opened = received(&mut counter) - before;
            assert!(
                opened <= spec["at_most"].as_u64().unwrap(),
                "{opened} connections opened"
            );
        } else if let Some(settings) = step.get("configure") {
            let mut config = Config::default();
            let error = settings
                .as_object()
                .unwrap()
                .iter()
                .find_map(|(name, value)| config.set(name, &host_value(value)).err())
                .expect("refused");
            expect_error(&error, &step["error"]);
        } else if let Some(entry) = step.get("periodic") {
            if entry.to_string().contains("$not_json") {
                return; // Rust's types hold no such value.
            }
            let error = Periodic::new(entry["cron"].as_str().unwrap(), entry["class"].as_str().unwrap())
                .and_then(|p| match entry["tz"].as_str() {
                    Some(tz) => p.time_zone(tz),
                    None => Ok(p),
                })
                .expect_err("refused");
            expect_error(&error, &step["error"]);
        } else {
            panic!("a step this runner does not know: {step}");
        }
    }

    async fn stop(self) {
        if let Some((handle, running)) = self.worker {
            handle.stop();
            tokio::time::timeout(Duration::from_secs(15), running)
                .await
                .expect("the worker stopped")
                .unwrap()
                .unwrap();
        }
    }
}

fn expect_error(error: &cogworker::Error, expected: &Value) {
    assert!(matches!(error, cogworker::Error::Config { .. }), "{error:?}");
    assert_eq!(expected["class"], "ConfigError");
    assert_eq!(error.field(), expected["field"].as_str(), "{error}");
    if let Some(value) = expected["value"].as_str() {
        assert_eq!(error.value(), Some(value), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_for_rust_behaves_as_written() {
    let all: Value = serde_json::from_str(SCENARIOS).unwrap();
    let mut ran = 0;
    for scenario in all["scenarios"].as_array().unwrap() {
        let hosts = scenario["hosts"].as_array();
        if hosts.is_some_and(|h| !h.contains(&json!("rust"))) {
            continue;
        }
        let redis = TestRedis::start();
        let config = redis.config();
        let mut client = Client::new(&config).unwrap();
        if scenario["client_middleware"]
            .as_array()
            .is_some_and(|m| m.contains(&json!("tenant")))
        {
            client = client.with_middleware(|job: Job| {
                if job.args_slice() == [json!("stop")] {
                    return None;
                }
                Some(job.field("tenant", json!("acme")))
            });
        }
        let mut run = Run {
            api: Api::new(client.clone()),
            client,
            config,
            redis,
            jids: HashMap::new(),
            trail: Arc::default(),
            calls: Arc::default(),
            scenario: scenario.clone(),
            worker: None,
        };
        eprintln!("scenario {}", scenario["name"]);
        for step in scenario["steps"].as_array().unwrap() {
            run.step(step).await;
        }
        run.stop().await;
        ran += 1;
    }
    assert!(ran >= 8, "{ran} scenarios ran");
}

/// `value` with every `{"$repeat": text, "times": n}` made that text.
fn repeated(value: &Value) -> Value {
    match value {
        Value::Object(map) if map.contains_key("$repeat") => Value::String(
            map["$repeat"]
                .as_str()
                .unwrap()
                .repeat(map["times"].as_u64().unwrap() as usize),
        ),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), repeated(v))).collect()),
        Value::Array(items) => Value::Array(items.iter().map(repeated).collect()),
        other => other.clone(),
    }
}
