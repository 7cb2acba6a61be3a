//! The pages (GET). Everything shown goes through maud, which escapes it.

use super::security::{CsrfToken, CSRF_FIELD};
use super::State;
use crate::api::JobSet;
use crate::job::Job;
use axum::extract::{Extension, Path, Query};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use maud::{html, Markup, DOCTYPE};
use serde_json::Value;
use std::collections::HashMap;

pub(crate) const PAGE_SIZE: isize = 25;

pub(crate) type Params = Query<HashMap<String, String>>;

/// A page, or the error that kept it from rendering (shown, not hidden).
pub(crate) type PageResult = Result<Html<String>, WebError>;

pub(crate) struct WebError(pub StatusCode, pub String);

impl From<crate::error::Error> for WebError {
    fn from(e: crate::error::Error) -> Self {
        let status = match e {
            crate::error::Error::InvalidArgument { .. } => StatusCode::BAD_REQUEST,
            _ => StatusCode::SERVICE_UNAVAILABLE,
        };
        WebError(status, e.to_string())
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let body = layout("Error", "", &CsrfToken(String::new()), html! { p.error { (self.1) } });
        (self.0, body).into_response()
    }
}

pub(crate) fn layout(title: &str, active: &str, csrf: &CsrfToken, body: Markup) -> Html<String> {
    let nav = [
        ("/", "Dashboard"),
        ("/queues", "Queues"),
        ("/busy", "Busy"),
        ("/processes", "Processes"),
        ("/sets/scheduled", "Scheduled"),
        ("/sets/retry", "Retries"),
        ("/sets/dead", "Dead"),
        ("/periodic", "Periodic"),
        ("/limiters", "Limiters"),
        ("/flow", "Flow"),
        ("/batches", "Batches"),
        ("/history", "History"),
        ("/classes", "Metrics"),
    ];
    Html(
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (title) " · cogworker" }
                    link rel="stylesheet" href="/static/app.css";
                    script src="/static/app.js" defer {}
                }
                body data-csrf=(csrf.0) {
                    header {
                        a.brand href="/" { "cogworker" }
                        nav {
                            @for (href, label) in nav {
                                a href=(href) class=[(active == href).then_some("active")] { (label) }
                            }
                        }
                    }
                    main { h1 { (title) } (body) }
                }
            }
        }
        .into_string(),
    )
}

pub(crate) fn button(action: &str, label: &str, csrf: &CsrfToken, extra: &[(&str, &str)], danger: bool) -> Markup {
    html! {
        form.inline method="post" action=(action) {
            input type="hidden" name=(CSRF_FIELD) value=(csrf.0);
            @for (name, value) in extra { input type="hidden" name=(name) value=(value); }
            button type="submit" class=[danger.then_some("danger")] data-confirm=[danger.then_some("Sure?")] { (label) }
        }
    }
}

pub(crate) fn time(epoch: f64) -> String {
    chrono::DateTime::from_timestamp_millis((epoch * 1000.0) as i64)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_default()
}

fn ago(epoch: f64) -> String {
    let seconds = (crate::job::now() - epoch).max(0.0);
    match seconds {
        s if s < 60.0 => format!("{s:.0}s ago"),
        s if s < 3600.0 => format!("{:.0}m ago", s / 60.0),
        s if s < 86400.0 => format!("{:.1}h ago", s / 3600.0),
        s => format!("{:.1}d ago", s / 86400.0),
    }
}

/// Pages past this are clamped: `(page - 1) * PAGE_SIZE` must not overflow.
const PAGE_MAX: isize = 1_000_000_000;

pub(crate) fn page_number(params: &HashMap<String, String>) -> isize {
    params
        .get("page")
        .and_then(|p| p.parse::<isize>().ok())
        .filter(|p| *p >= 1)
        .unwrap_or(1)
        .min(PAGE_MAX)
}

pub(crate) fn pager(base: &str, page: isize, total: u64) -> Markup {
    let pages = ((total as isize) + PAGE_SIZE - 1) / PAGE_SIZE;
    html! {
        @if pages > 1 {
            p.pager {
                @if page > 1 { a href=(format!("{base}?page={}", page - 1)) { "← newer" } " " }
                "page " (page) " of " (pages)
                @if page < pages { " " a href=(format!("{base}?page={}", page + 1)) { "older →" } }
            }
        }
    }
}

pub(crate) async fn dashboard(Extension(csrf): Extension<CsrfToken>, state: axum::extract::State<State>) -> PageResult {
    let api = &state.api;
    let totals = api.stats().await?;
    let today = api.stats_today().await?;
    let queues = api.queues().await?;
    let processes = api.processes().await?;
    let (scheduled, retry, dead) = (
        api.set_size(JobSet::Scheduled).await?,
        api.set_size(JobSet::Retry).await?,
        api.set_size(JobSet::Dead).await?,
    );
    let busy: u64 = processes.iter().map(|p| p.busy).sum();
    let body = html! {
        section.cards {
            div.card { span.label { "Processed" } span.value #processed { (totals.processed) } span.sub { span #processed-today { (today.processed) } " today" } }
            div.card { span.label { "Failed" } span.value #failed { (totals.failed) } span.sub { span #failed-today { (today.failed) } " today" } }
            div.card { span.label { "Expired" } span.value #expired { (totals.expired) } span.sub { span #expired-today { (today.expired) } " today" } }
            div.card { span.label { "Busy" } span.value #busy { (busy) } span.sub { (counted(processes.len(), "process", "processes")) } }
            a.card href="/sets/scheduled" { span.label { "Scheduled" } span.value { (scheduled) } }
            a.card href="/sets/retry" { span.label { "Retries" } span.value { (retry) } }
            a.card href="/sets/dead" { span.label { "Dead" } span.value #dead-count { (dead) } }
        }
        section {
            h2 { "Throughput" }
            p.sub { "jobs/s, processed and failed, sampled every 2 s while this page is open" }
            svg #chart.chart viewBox="0 0 720 200" role="img" aria-label="throughput chart: processed and failed jobs per second" {
                rect.processed x="52" y="6" width="10" height="10" {}
                text.legend x="66" y="15" { "processed" }
                rect.failed x="182" y="6" width="10" height="10" {}
                text.legend x="196" y="15" { "failed" }
                line.grid x1="52" x2="708" y1="26" y2="26" {}
                line.grid x1="52" x2="708" y1="93" y2="93" {}
                line.axis x1="52" x2="708" y1="160" y2="160" {}
                text.tick #chart-max x="46" y="30" text-anchor="end" { "1" }
                text.tick #chart-mid x="46" y="97" text-anchor="end" { "0.5" }
                text.tick x="46" y="164" text-anchor="end" { "0" }
                text.axis transform="translate(12 93) rotate(-90)" text-anchor="middle" { "jobs / s" }
                text.tick x="52" y="176" { "2 min ago" }
                text.tick x="708" y="176" text-anchor="end" { "now" }
                text.axis x="380" y="196" text-anchor="middle" { "time (a sample every 2 s)" }
            }
            p.sub #chart-label { "waiting for samples…" }
        }
        section {
            h2 { "Queues" }
            (queue_table(&queues, &csrf))
        }
        p.sub { "Redis " (state.redis_target) " · namespace " (state.namespace) }
    };
    Ok(layout("Dashboard", "/", &csrf, body))
}

fn queue_table(queues: &[crate::api::QueueInfo], csrf: &CsrfToken) -> Markup {
    html! {
        @if queues.is_empty() { p.empty { "No queues yet." } } @else {
            table {
                thead { tr { th { "Queue" } th.num { "Size" } th.num { "Latency" } th { "State" } th { "" } } }
                tbody {
                    @for q in queues {
                        tr {
                            td { a href=(format!("/queues/{}", urlencode(&q.name))) { (q.name) } }
                            td.num { (q.size) }
                            td.num { (format!("{:.1}s", q.latency)) }
                            td { @if q.paused { span.badge.warn { "paused" } } @else { "running" } }
                            td.actions {
                                @let base = format!("/queues/{}", urlencode(&q.name));
                                @if q.paused { (button(&format!("{base}/unpause"), "Resume", csrf, &[], false)) }
                                @else { (button(&format!("{base}/pause"), "Pause", csrf, &[], false)) }
                                (button(&format!("{base}/clear"), "Clear", csrf, &[], true))
                            }
                        }
                    }
                }
            }
        }
    }
}

pub(crate) fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

pub(crate) async fn queues(Extension(csrf): Extension<CsrfToken>, state: axum::extract::State<State>) -> PageResult {
    let queues = state.api.queues().await?;
    Ok(layout("Queues", "/queues", &csrf, queue_table(&queues, &csrf)))
}

pub(crate) async fn queue(
    Extension(csrf): Extension<CsrfToken>,
    state: axum::extract::State<State>,
    Path(name): Path<String>,
    Query(params): Params,
) -> PageResult {
    let info = state.api.queue(&name).await?;
    let page = page_number(&params);
    let raws = state.api.queue_jobs(&name, (page - 1) * PAGE_SIZE, PAGE_SIZE).await?;
    // A grouped queue's groups, in turn order (sharded by queue there are
    // none: a grouped push is refused).
    let groups = match state.api.groups(&name, 0, PAGE_SIZE).await {
        Err(crate::error::Error::InvalidArgument { .. }) => Vec::new(),
        groups => groups?,
    };
    let here = format!("/queues/{}", urlencode(&name));
    let body = html! {
        p { (info.size) " jobs, latency " (format!("{:.1}s", info.latency)) @if info.paused { " · " span.badge.warn { "paused" } } }
        @if !groups.is_empty() {
            h2 { "Groups" }
            table {
                thead { tr { th { "Group" } th.num { "Jobs" } th.num { "Running / cap" } th.num { "Rate" } th.num { "Weight" } th.num { "Turns" } th {} } }
                tbody {
                    @for group in &groups {
                        tr {
                            td {
                                code { (crate::printable::shown(&group.name)) }
                                @if group.paused { " " span.badge.warn { "paused" } }
                                @if group.parked { " " span.badge { "at its cap" } }
                                @if let Some(until) = group.waiting_until {
                                    " " span.badge title=(format!("until {}", time(until))) { "waiting out its rate" }
                                }
                            }
                            td.num { (group.size) }
                            td.num { @if let Some(cap) = group.cap { (group.running) " / " (cap) } }
                            td.num { @if let (Some(rate), Some(period)) = (group.rate, group.rate_period) { (rate) " per " (period) " s" @if let Some(kind) = group.rate_kind.as_deref().filter(|k| *k != "window") { " (" (kind) ")" } } }
                            td.num { (group.weight) }
                            td.num { (group.turns.map(|t| format!("{t:.1}")).unwrap_or_default()) }
                            td.actions {
                                @if group.paused {
                                    (button(&format!("{here}/resume_group"), "Resume", &csrf, &[("group", &group.name)], false))
                                } @else {
                                    (button(&format!("{here}/pause_group"), "Pause", &csrf, &[("group", &group.name)], false))
                                }
                            }
                        }
                    }
                }
            }
            h2 { "Jobs" }
        }
        table {
            thead { tr { th { "Class" } th { "Args" } th { "Jid" } th.num { "Priority" } th { "Enqueued" } th {} } }
            tbody {
                @for raw in &raws {
                    @match Job::parse(raw) {
                        Ok(job) => tr {
                            td { (job.display_class()) } td.args { code { (args_text(&job)) } }
                            td { code { (job.jid_str()) } }
                            td.num { (job.priority_level()) }
                            td { (job.get("enqueued_at").and_then(crate::sidekiq::epoch_seconds).map(ago).unwrap_or_default()) }
                            td.actions { (cancel_button(job.jid_str(), &format!("/queues/{}", urlencode(&name)), &csrf)) }
                        },
                        Err(reason) => tr { td colspan="6" { "unparseable: " (reason) } },
                    }
                }
            }
        }
        (pager(&format!("/queues/{}", urlencode(&name)), page, info.size))
    };
    Ok(layout(&format!("Queue {name}"), "/queues", &csrf, body))
}

pub(crate) async fn busy(Extension(csrf): Extension<CsrfToken>, state: axum::extract::State<State>) -> PageResult {
    let rows = state.api.busy().await?;
    let body = html! {
        @if rows.is_empty() { p.empty { "Nothing running." } } @else {
            table {
                thead { tr { th { "Process" } th { "Queue" } th { "Class" } th { "Jid" } th { "Args" } th { "Progress" } th { "Running since" } th {} } }
                tbody {
                    @for busy in &rows {
                        tr {
                            td { code { (busy.identity) } }
                            td { (busy.queue) }
                            td { (busy.job.as_object().map(crate::job::display_class_of).unwrap_or("")) }
                            @let jid = busy.job["jid"].as_str().unwrap_or("");
                            td { a href=(format!("/jobs/{}", urlencode(jid))) { code { (jid) } } }
                            td.args { code { (payload_args_text(&busy.job)) } }
                            td { @if let Some(report) = &busy.progress { (progress_bar(report)) } }
                            td { (ago(busy.run_at)) }
                            td.actions { (cancel_button(busy.job["jid"].as_str().unwrap_or(""), "/busy", &csrf)) }
                        }
                    }
                }
            }
        }
    };
    Ok(layout("Busy", "/busy", &csrf, body))
}

/// One job by jid: its kept result (`result_ttl`) and its last progress
/// report, for as long as either is kept.
pub(crate) async fn job(
    Extension(csrf): Extension<CsrfToken>,
    state: axum::extract::State<State>,
    Path(jid): Path<String>,
) -> PageResult {
    let record = state.api.result(&jid).await?;
    let progress = match &record {
        Some(record) => record.get("progress").cloned(),
        None => state.api.progress(&jid).await?,
    };
    if record.is_none() && progress.is_none() {
        return Err(WebError(
            StatusCode::NOT_FOUND,
            format!(
                "nothing is kept of job {jid}: pushed without result_ttl and no progress reported, expired, or unknown"
            ),
        ));
    }
    let pretty = record.as_ref().and_then(|r| serde_json::to_string_pretty(r).ok());
    let body = html! {
        dl {
            dt { "Jid" } dd { code { (jid) } }
            @if let Some(record) = &record {
                dt { "Status" } dd { (record["status"].as_str().unwrap_or("")) }
                dt { "Class" } dd { (record["class"].as_str().unwrap_or("")) }
                dt { "Queue" } dd { (record["queue"].as_str().unwrap_or("")) }
                @if let Some(at) = record["started_at"].as_f64() { dt { "Started" } dd { (time(at)) } }
                @if let Some(at) = record["finished_at"].as_f64() { dt { "Finished" } dd { (time(at)) } }
                @if let Some(m) = record["error_message"].as_str() { dt { "Error" } dd.error { (record["error_class"].as_str().unwrap_or("")) ": " (m) } }
            }
            @if let Some(report) = &progress {
                dt { "Progress" } dd { (progress_bar(report)) }
                @if let Some(at) = report["at"].as_f64() { dt { "Reported" } dd { (ago(at)) } }
                @if !report["data"].is_null() { dt { "Data" } dd { code { (report["data"].to_string()) } } }
            }
        }
        @if let Some(pretty) = pretty { h2 { "Result record" } pre.payload { (pretty) } }
    };
    Ok(layout(&format!("Job {jid}"), "/busy", &csrf, body))
}

/// A job's last progress report (see [`crate::long_jobs`]): a bar when it
/// gave a percent, its message, and how its run ended once it did.
pub(crate) fn progress_bar(report: &Value) -> Markup {
    html! {
        @if let Some(percent) = report["percent"].as_f64() {
            progress max="100" value=(percent) title=(format!("{percent:.1}%")) {} " " (format!("{percent:.0}%")) " "
        }
        @if let Some(message) = report["message"].as_str() { span.sub { (message) } }
        @if let Some(state) = report["state"].as_str() { " " span.badge { (state) } }
    }
}

pub(crate) async fn processes(Extension(csrf): Extension<CsrfToken>, state: axum::extract::State<State>) -> PageResult {
    let processes = state.api.processes().await?;
    let body = html! {
        @if processes.is_empty() { p.empty { "No live processes." } } @else {
            table {
                thead { tr { th { "Identity" } th { "Queues" } th.num { "Busy" } th { "Started" } th { "Beat" } th { "" } } }
                tbody {
                    @for p in &processes {
                        @let base = format!("/processes/{}", urlencode(&p.identity));
                        tr {
                            td { code { (p.identity) } @if p.quiet { " " span.badge.warn { "quiet" } }
                                 br; span.sub { (p.info["version"].as_str().unwrap_or("")) " · pid " (p.info["pid"]) " · " (p.info["fetch"].as_str().unwrap_or("")) " fetch" } }
                            td { (p.info["queues"].as_array().map(|q| q.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")).unwrap_or_default()) }
                            td.num { (p.busy) " / " (p.info["concurrency"]) }
                            td { (p.info["started_at"].as_f64().map(ago).unwrap_or_default()) }
                            td { (ago(p.beat)) }
                            td.actions {
                                @if !p.quiet { (button(&format!("{base}/quiet"), "Quiet", &csrf, &[], false)) }
                                (button(&format!("{base}/stop"), "Stop", &csrf, &[], true))
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(layout("Processes", "/processes", &csrf, body))
}

pub(crate) async fn history(Extension(csrf): Extension<CsrfToken>, state: axum::extract::State<State>) -> PageResult {
    let entries = state.api.history(100).await?;
    let body = html! {
        @if entries.is_empty() { p.empty { "No executions yet." } } @else {
            table {
                thead { tr { th { "Started" } th { "Class" } th { "Queue" } th { "Status" } th.num { "Duration" } th { "Jid" } } }
                tbody {
                    @for entry in &entries {
                        @let e: Value = serde_json::from_str(entry).unwrap_or(Value::Null);
                        tr {
                            td { (e["started_at"].as_f64().map(time).unwrap_or_default()) }
                            td { (e["class"].as_str().unwrap_or("")) }
                            td { (e["queue"].as_str().unwrap_or("")) }
                            td { @if e["status"] == "ok" { span.badge.ok { "ok" } } @else { span.badge.bad { "failed" } " " (e["error_class"].as_str().unwrap_or("")) } }
                            td.num { (format!("{:.1} ms", e["duration_ms"].as_f64().unwrap_or(0.0))) }
                            td { code { (e["jid"].as_str().unwrap_or("")) } }
                        }
                    }
                }
            }
        }
    };
    Ok(layout("History", "/history", &csrf, body))
}

pub(crate) async fn periodic(Extension(csrf): Extension<CsrfToken>, state: axum::extract::State<State>) -> PageResult {
    let entries = state.api.periodic().await?;
    let locks = state.api.unique_locks(200).await?;
    let body = html! {
        @if entries.is_empty() { p.empty { "No live process ticks for a periodic entry." } } @else {
            table {
                thead { tr { th { "Cron" } th { "Class" } th { "Args" } th { "Queue" } th { "Last slot" } th { "Run lock" } } }
                tbody {
                    @for p in &entries {
                        tr {
                            td { code { (p.entry["cron"].as_str().unwrap_or("")) } @if let Some(tz) = p.entry["tz"].as_str() { " " span.sub { (tz) } } }
                            td { (p.entry["class"].as_str().unwrap_or("")) }
                            td.args { code { (crate::job::safe_string(p.entry["args"].to_string(), 300)) } }
                            td { (p.entry["queue"].as_str().unwrap_or("")) }
                            td { (p.last_slot.map(|s| time(s as f64)).unwrap_or_else(|| "never".into())) }
                            td { @if p.entry["until_executed"] == true { (p.running.as_deref().unwrap_or("free")) } @else { "—" } }
                        }
                    }
                }
            }
        }
        h2 { "Unique locks" }
        @if locks.is_empty() { p.empty { "None held." } } @else {
            table {
                thead { tr { th { "Digest" } th { "Owner jid" } th.num { "Expires in" } th { "" } } }
                tbody {
                    @for lock in &locks {
                        tr {
                            td { code { (lock.name) } } td { code { (lock.owner) } } td.num { (lock.ttl) "s" }
                            td.actions { (button(&format!("/unique/{}/clear", urlencode(&lock.name)), "Clear", &csrf, &[], true)) }
                        }
                    }
                }
            }
        }
    };
    Ok(layout("Periodic", "/periodic", &csrf, body))
}

pub(crate) async fn limiters(Extension(csrf): Extension<CsrfToken>, state: axum::extract::State<State>) -> PageResult {
    let limiters = state.api.limiters().await?;
    let body = html! {
        @if limiters.is_empty() { p.empty { "No rate limiter is defined." } } @else {
            table {
                thead { tr { th { "Name" } th { "Kind" } th.num { "Limit" } th.num { "Interval" } th.num { "In use" } th.num { "Refused" } } }
                tbody {
                    @for l in &limiters {
                        tr {
                            td { code { (l.name) } }
                            td { (l.kind) }
                            td.num { (l.limit) }
                            td.num { @if let Some(i) = l.interval { (i) "s" } @else { "—" } }
                            td.num { (l.in_use) }
                            td.num { (l.refused) }
                        }
                    }
                }
            }
        }
    };
    Ok(layout("Limiters", "/limiters", &csrf, body))
}

/// The flow keys with state (see `flow.rs`): each debounced, throttled or
/// replacing key, with what its next push would find.
pub(crate) async fn flow(Extension(csrf): Extension<CsrfToken>, state: axum::extract::State<State>) -> PageResult {
    let keys = state.api.flow_keys(crate::api::FLOW_KEYS_MAX).await?;
    let job_link = |jid: &Option<String>| {
        html! { @if let Some(jid) = jid { code { (jid) } } @else { "—" } }
    };
    let body = html! {
        @if keys.is_empty() { p.empty { "No debounced, throttled or replacing key has state." } } @else {
            p { (keys.len()) " keys with state, the latest pushed first." }
            table {
                thead { tr { th { "Mode" } th { "Key" } th { "Class" } th { "Queue" } th { "Job" } th { "State" } th { "Expires" } } }
                tbody {
                    @for k in &keys {
                        tr {
                            td { (k.mode) }
                            td { code { (k.key) } }
                            td { (k.class) }
                            td { a href=(format!("/queues/{}", urlencode(&k.queue))) { (k.queue) } }
                            td { (job_link(&k.jid)) }
                            td {
                                @match (k.mode.as_str(), k.due, k.waiting) {
                                    ("debounce", Some(due), _) => {
                                        "burst since " (k.began.map(ago).unwrap_or_default()) ", due " (time(due))
                                    }
                                    ("debounce", None, _) => { "came due: the next push begins a burst" }
                                    ("throttle", Some(opens), _) => { "next window opens " (time(opens)) }
                                    ("throttle", None, _) => { "window open" }
                                    (_, _, Some(true)) => { "waiting: a push replaces it" }
                                    (_, _, Some(false)) => { "taken: the next push is a new job" }
                                    _ => { "—" }
                                }
                            }
                            td { (time(k.expires_at)) }
                        }
                    }
                }
            }
        }
    };
    Ok(layout("Flow", "/flow", &csrf, body))
}

pub(crate) async fn stats_json(state: axum::extract::State<State>) -> Result<Response, WebError> {
    let stats = state.api.stats().await?;
    let today = state.api.stats_today().await?;
    let dead = state.api.set_size(JobSet::Dead).await?;
    let busy: u64 = state.api.processes().await?.iter().map(|p| p.busy).sum();
    let body = serde_json::json!({
        "processed": stats.processed,
        "failed": stats.failed,
        "processed_today": today.processed,
        "failed_today": today.failed,
        "expired": stats.expired,
        "expired_today": today.expired,
        "busy": busy,
        "dead": dead,
        "time": crate::job::now(),
    });
    Ok(([(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response())
}

pub(crate) async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("assets/app.js"),
    )
        .into_response()
}

pub(crate) async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("assets/app.css"),
    )
        .into_response()
}

/// A POST form with the CSRF token and one button.
/// The button that cancels job `jid`, then comes back to `back`.
pub(crate) fn cancel_button(jid: &str, back: &str, csrf: &CsrfToken) -> Markup {
    button(
        &format!("/jobs/{}/cancel", urlencode(jid)),
        "Cancel",
        csrf,
        &[("back", back)],
        true,
    )
}

pub(crate) fn args_text(job: &Job) -> String {
    let text = serde_json::to_string(job.display_args()).unwrap_or_default();
    crate::job::safe_string(text, 300)
}

/// [`args_text`] of a job as a JSON value (a busy slot's payload).
fn payload_args_text(job: &Value) -> String {
    let text = match job.as_object().and_then(crate::job::display_args_of) {
        Some(arguments) => serde_json::to_string(arguments).unwrap_or_default(),
        None => job["args"].to_string(),
    };
    crate::job::safe_string(text, 300)
}

/// `1 process`, `2 processes`.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
