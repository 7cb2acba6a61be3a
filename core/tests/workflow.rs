//! Workflows (issue #31, part 2, in the core): a chain passes each step's
//! result on, a chord's callback gets its group's results in order, a step
//! that dies stops the workflow and fires its death callback, steps run
//! once each under a kill -9 of the worker, and what is refused says so.

mod common;

use cogworker::{Api, Batch, BatchEvent, Client, Failure, Job, Retry, Step, Worker, Workflow};
use common::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What each handler ran with: (class, args), and its job's `created_at`
/// and `enqueued_at`.
type Ran = Arc<Mutex<Vec<(String, Vec<Value>, (f64, f64))>>>;

/// `Add` returns the sum of its number args; `Wrap` returns its args as a
/// list; `Boom` fails; `Done` records its args. All record what they got.
fn workflow_worker(config: cogworker::Config) -> (Worker, Ran) {
    let ran: Ran = Arc::default();
    let record = |ran: &Ran, class: &str, job: &Job| {
        let time = |field: &str| job.get(field).and_then(Value::as_f64).unwrap_or(0.0);
        let times = (time("created_at"), time("enqueued_at"));
        ran.lock()
            .unwrap()
            .push((class.to_string(), job.args_slice().to_vec(), times));
    };
    let (a, w, b, d) = (ran.clone(), ran.clone(), ran.clone(), ran.clone());
    let worker = Worker::builder(config)
        .register_returning("Add", move |job| {
            record(&a, "Add", &job);
            async move {
                let sum: f64 = job.args_slice().iter().filter_map(Value::as_f64).sum();
                Ok(json!(sum))
            }
        })
        .register_returning("Wrap", move |job| {
            record(&w, "Wrap", &job);
            async move { Ok(Value::Array(job.args_slice().to_vec())) }
        })
        .register("Boom", move |job| {
            record(&b, "Boom", &job);
            async { Err(Failure::new("Boom", "always")) }
        })
        .register("Done", move |job| {
            record(&d, "Done", &job);
            async { Ok(()) }
        })
        .build()
        .unwrap();
    (worker, ran)
}

async fn wait_ran(ran: &Ran, class: &str, n: usize) {
    let (ran, class) = (ran.clone(), class.to_string());
    wait_until(&format!("{n} {class} ran"), Duration::from_secs(20), move || {
        let (ran, class) = (ran.clone(), class.clone());
        async move { ran.lock().unwrap().iter().filter(|(c, _, _)| *c == class).count() >= n }
    })
    .await;
}

fn args_of(ran: &Ran, class: &str) -> Vec<Vec<Value>> {
    ran.lock()
        .unwrap()
        .iter()
        .filter(|(c, _, _)| c == class)
        .map(|(_, args, _)| args.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_passes_results_and_a_chord_gets_its_groups_results_in_order() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    // Add(1, 2) -> Add(3, 10) -> group[Wrap(13, "a"), Wrap(13, "b"), Add(13, 0.5)]
    // -> Done([[13, "a"], [13, "b"], 13.5], "end") -> Done("plain").
    let workflow = Workflow::new("numbers")
        .then(Step::job(Job::new("Add").args([json!(1), json!(2)])))
        .then(Step::job(Job::new("Add").args([json!(10)])).taking_result())
        .then(
            Step::group([
                Job::new("Wrap").args([json!("a")]),
                Job::new("Wrap").args([json!("b")]),
                Job::new("Add").args([json!(0.5)]),
            ])
            .taking_result(),
        )
        .then(Step::job(Job::new("Done").args([json!("end")])).taking_result())
        .then(Step::job(Job::new("Done").args([json!("plain")])))
        .batch(Batch::new("numbers").on(BatchEvent::Success, Job::new("Done").args([json!("workflow")])));
    let pushed = client.push_workflow(workflow).await.unwrap();
    assert_eq!(pushed.steps.len(), 5);
    assert_eq!(pushed.steps[2].jids.len(), 3);
    let status = api.batch(&pushed.id).await.unwrap().unwrap();
    assert_eq!((status.total, status.pending), (5, 5), "one unit per step");

    let (worker, ran) = workflow_worker(config);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, "Done", 3).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    assert_eq!(
        args_of(&ran, "Add"),
        vec![
            vec![json!(1), json!(2)],
            vec![json!(3.0), json!(10)],
            vec![json!(13.0), json!(0.5)]
        ],
        "each step takes the result before it"
    );
    let mut wraps = args_of(&ran, "Wrap");
    wraps.sort_by_key(|args| args[1].to_string());
    assert_eq!(
        wraps,
        vec![vec![json!(13.0), json!("a")], vec![json!(13.0), json!("b")]]
    );
    let mut done = args_of(&ran, "Done");
    done.sort_by_key(|args| args.len());
    let chord = done.iter().find(|args| args.last() == Some(&json!("end"))).unwrap();
    assert_eq!(
        chord[0],
        json!([[13.0, "a"], [13.0, "b"], 13.5]),
        "the group's results, in the group's order"
    );
    assert!(
        done.contains(&vec![json!("plain")]),
        "a step not taking the result gets its args: {done:?}"
    );
    let whole = done
        .iter()
        .find(|args| args.last() == Some(&json!("workflow")))
        .unwrap();
    assert_eq!(whole[0]["event"], "success");
    assert_eq!(whole[0]["bid"], pushed.id.as_str());
    assert_eq!(done.len(), 3, "each once: {done:?}");
    // A step is enqueued when it is handed over, not when the workflow was
    // pushed (it waited for four steps before it).
    let (created, enqueued) = ran
        .lock()
        .unwrap()
        .iter()
        .find(|(class, args, _)| class == "Done" && args == &vec![json!("plain")])
        .map(|(_, _, times)| *times)
        .unwrap();
    assert!(
        enqueued > created + 0.002,
        "enqueued at {enqueued}, created at {created}"
    );
    let status = api.batch(&pushed.id).await.unwrap().unwrap();
    assert_eq!(status.state(), "success");
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_dies_stops_the_workflow_and_fires_its_death_callback() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let workflow = Workflow::chain([
        Job::new("Add").args([json!(1)]),
        Job::new("Boom").retry(Retry::Max(0)),
        Job::new("Done").args([json!("never")]),
    ])
    .batch(Batch::new("stops").on(BatchEvent::Death, Job::new("Done").args([json!("died")])));
    let pushed = client.push_workflow(workflow).await.unwrap();
    let (worker, ran) = workflow_worker(config);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, "Done", 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let done = args_of(&ran, "Done");
    assert_eq!(done.len(), 1, "the step after the dead one never runs: {done:?}");
    assert_eq!(done[0][0]["event"], "death");
    assert_eq!(done[0][1], "died");
    assert_eq!(args_of(&ran, "Boom").len(), 1);
    let status = api.batch(&pushed.id).await.unwrap().unwrap();
    assert_eq!(status.state(), "dead");
    assert_eq!((status.total, status.pending, status.dead), (3, 2, 1));
    handle.stop();
    task.await.unwrap().unwrap();
}

/// A cancelled job will never run: it counts in its batch as dead, so a
/// workflow whose step is cancelled ends with its `death` callback, and a
/// batch whose scheduled job is cancelled fires its own (issue #44 item
/// 4: the workflow stayed pending for 30 days, with nothing to run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_step_ends_the_workflow_with_its_death_callback() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let workflow = Workflow::chain([
        Job::new("Add").args([json!(1)]),
        Job::new("Done").args([json!("never")]),
    ])
    .batch(Batch::new("cancelled").on(BatchEvent::Death, Job::new("Done").args([json!("died")])));
    let pushed = client.push_workflow(workflow).await.unwrap();
    assert_eq!(api.cancel(&pushed.steps[0].jids[0]).await.unwrap(), "unknown");
    let batch = Batch::new("scheduled").on(BatchEvent::Death, Job::new("Done").args([json!("batch died")]));
    let open = client.open_batch(batch).await.unwrap();
    let later = open.push(Job::new("Add").delay(3600.0)).await.unwrap().unwrap();
    open.close().await.unwrap();
    assert_eq!(api.cancel(&later).await.unwrap(), "scheduled");

    let (worker, ran) = workflow_worker(config);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, "Done", 2).await;
    let mut done: Vec<Value> = args_of(&ran, "Done").into_iter().map(|args| args[1].clone()).collect();
    done.sort_by_key(|v| v.to_string());
    assert_eq!(
        done,
        [json!("batch died"), json!("died")],
        "each death callback once, no later step"
    );
    assert!(args_of(&ran, "Add").is_empty(), "the cancelled jobs never ran");
    let status = api.batch(&pushed.id).await.unwrap().unwrap();
    assert_eq!(status.state(), "dead");
    assert_eq!((status.total, status.pending, status.dead), (2, 2, 1));
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_workflow_cannot_be_is_refused_before_anything_is_written() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let api = Api::new(client.clone());
    let cases = [
        (Workflow::new("empty"), "steps"),
        (Workflow::new("g").then(Step::group([])), "steps[0]"),
        (
            Workflow::new("t").then(Step::job(Job::new("Add")).taking_result()),
            "steps[0].takes_result",
        ),
        (
            Workflow::chain([Job::new("Add"), Job::new("Add").delay(5.0)]),
            "steps[1]",
        ),
        (Workflow::chain([Job::new("Add").unique_for(60.0)]), "steps[0]"),
        (
            Workflow::group([Job::new("Add"), Job::new("Add").field("bid", json!("x"))]),
            "steps[0][1].bid",
        ),
    ];
    for (workflow, field) in cases {
        match client.push_workflow(workflow).await {
            Err(cogworker::Error::InvalidArgument { field: f, .. })
            | Err(cogworker::Error::InvalidJob { field: f, .. }) => {
                assert_eq!(f, field)
            }
            other => panic!("{field}: {other:?}"),
        }
    }
    // Through the ops API's JSON: a group's member taking a result was
    // taken, and its takes_result ignored.
    let steps = json!([{"group": [{"class": "Add", "args": [], "takes_result": true}]}]);
    match cogworker::host::api_calls::call(&api, "push_workflow", vec![steps]).await {
        Err(cogworker::Error::InvalidArgument { field, .. }) => assert_eq!(field, "steps[0].group[0].takes_result"),
        other => panic!("{other:?}"),
    }
    assert!(api.batches(10).await.unwrap().is_empty(), "nothing written");
}

/// The worker is killed with -9 while a 30-step chain runs, again and
/// again; a new one carries on (recovering the killed one's job). The
/// chain ends, each step having taken the result of the one before: the
/// last returns 30.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_finishes_through_kill_9_with_every_result_passed_on() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let steps = 30;
    let mut jobs = vec![Job::new("Sum").args([json!(0)])];
    for _ in 1..steps {
        jobs.push(Job::new("Sum"));
    }
    let mut workflow = Workflow::new("kill -9");
    for (index, job) in jobs.into_iter().enumerate() {
        let step = Step::job(job.result_ttl(600.0));
        workflow = workflow.then(if index == 0 { step } else { step.taking_result() });
    }
    let pushed = client.push_workflow(workflow).await.unwrap();
    let last = pushed.steps.last().unwrap().jids[0].clone();
    let namespace = config.namespace().to_string();
    let url = redis.url();
    let spawn = || spawn_worker(&url, &namespace, &[("TEST_ORPHAN_THRESHOLD", "2")]);
    let mut child = spawn();
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        kill9(&mut child);
        child = spawn();
    }
    let (waiting, jid) = (api.clone(), last.clone());
    wait_until("the last step succeeded", Duration::from_secs(60), move || {
        let (api, jid) = (waiting.clone(), jid.clone());
        async move { api.status(&jid).await.is_ok_and(|s| s == "succeeded") }
    })
    .await;
    send_signal(&child, 15);
    assert!(wait_exit(&mut child, Duration::from_secs(20)).success());
    let result = api.result(&last).await.unwrap().unwrap();
    assert_eq!(result["value"], json!(steps), "each step added one to the one before's");
    let status = api.batch(&pushed.id).await.unwrap().unwrap();
    assert_eq!((status.state(), status.pending), ("success", 0));
}
