//! The pages (GET). Everything shown goes through maud, which escapes it.

use super::security::{CsrfToken, CSRF_FIELD};
use super::State;
use crate::api::{JobSet, SetEntry};
use crate::job::Job;
use axum::extract::{Extension, Path, Query};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use maud::{html, Markup, DOCTYPE};
use serde_json::Value;
use std::collections::HashMap;

pub(crate) const PAGE_SIZE: isize = 25;

type Params = Query<HashMap<String, String>>;

/// A page, or the error that kept it from rendering (shown, not hidden).
pub(crate) type PageResult = Result<Html<String>, WebError>;

pub(crate) struct WebError(pub StatusCode, pub String);

impl From<crate::Error> for WebError {
    fn from(e: crate::Error) -> Self {
        let status = match e {
            crate::Error::InvalidArgument { .. } => StatusCode::BAD_REQUEST,
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

pub(crate) fn set_of(name: &str) -> Result<JobSet, WebError> {
    match name {
        "scheduled" => Ok(JobSet::Scheduled),
        "retry" => Ok(JobSet::Retry),
        "dead" => Ok(JobSet::Dead),
        _ => Err(WebError(StatusCode::NOT_FOUND, format!("no set {name:?}"))),
    }
}

fn set_title(name: &str) -> &'static str {
    match name {
        "scheduled" => "Scheduled",
        "retry" => "Retries",
        _ => "Dead",
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

/// A POST form with the CSRF token and one button.
/// The button that cancels job `jid`, then comes back to `back`.
fn cancel_button(jid: &str, back: &str, csrf: &CsrfToken) -> Markup {
    button(
        &format!("/jobs/{}/cancel", urlencode(jid)),
        "Cancel",
        csrf,
        &[("back", back)],
        true,
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

fn args_text(job: &Job) -> String {
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

/// Pages past this are clamped: `(page - 1) * PAGE_SIZE` must not overflow.
const PAGE_MAX: isize = 1_000_000_000;

fn page_number(params: &HashMap<String, String>) -> isize {
    params
        .get("page")
        .and_then(|p| p.parse::<isize>().ok())
        .filter(|p| *p >= 1)
        .unwrap_or(1)
        .min(PAGE_MAX)
}

fn pager(base: &str, page: isize, total: u64) -> Markup {
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
    let body = html! {
        p { (info.size) " jobs, latency " (format!("{:.1}s", info.latency)) @if info.paused { " · " span.badge.warn { "paused" } } }
        table {
            thead { tr { th { "Class" } th { "Args" } th { "Jid" } th.num { "Priority" } th { "Enqueued" } th {} } }
            tbody {
                @for raw in &raws {
                    @match Job::parse(raw) {
                        Ok(job) => tr {
                            td { (job.display_class()) } td.args { code { (args_text(&job)) } }
                            td { code { (job.jid_str()) } }
                            td.num { (job.priority_level()) }
                            td { (job.get("enqueued_at").and_then(Value::as_f64).map(ago).unwrap_or_default()) }
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
                thead { tr { th { "Process" } th { "Queue" } th { "Class" } th { "Jid" } th { "Args" } th { "Running since" } th {} } }
                tbody {
                    @for busy in &rows {
                        tr {
                            td { code { (busy.identity) } }
                            td { (busy.queue) }
                            td { (busy.job.as_object().map(crate::job::display_class_of).unwrap_or("")) }
                            td { code { (busy.job["jid"].as_str().unwrap_or("")) } }
                            td.args { code { (payload_args_text(&busy.job)) } }
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

pub(crate) async fn set(
    Extension(csrf): Extension<CsrfToken>,
    state: axum::extract::State<State>,
    Path(name): Path<String>,
    Query(params): Params,
) -> PageResult {
    let set = set_of(&name)?;
    let page = page_number(&params);
    let search = params.get("q").map(|q| q.trim()).filter(|q| !q.is_empty());
    let total = state.api.set_size(set).await?;
    let from: u64 = params.get("from").and_then(|f| f.parse().ok()).unwrap_or(0);
    // A jid is searched like a class (bounded, newest first), never by a
    // scan of the whole set: any page can make a browser send this GET.
    let (entries, next): (Vec<SetEntry>, Option<u64>) = match search {
        Some(q) => {
            let step = state.api.search_set_from(set, q, from, PAGE_SIZE as usize).await?;
            (step.found, step.next)
        }
        None => (state.api.set_page(set, (page - 1) * PAGE_SIZE, PAGE_SIZE).await?, None),
    };
    let base = format!("/sets/{name}");
    let when = match set {
        JobSet::Scheduled => "Run at",
        JobSet::Retry => "Retry at",
        JobSet::Dead => "Died",
    };
    let body = html! {
        form.search method="get" action=(base) {
            input type="search" name="q" placeholder="class or jid" maxlength=(crate::api::SEARCH_TEXT_MAX) value=(search.unwrap_or(""));
            button type="submit" { "Search" }
            @if search.is_some() { " " a href=(base) { "clear" } }
        }
        p { (total) " in all" @if let Some(q) = search { " · " (entries.len()) " matching " code { (q) } } }
        form #bulk method="post" action=(format!("{base}/actions")) {
            input type="hidden" name=(CSRF_FIELD) value=(csrf.0);
            div.bulk {
                button type="submit" name="action" value="retry" { "Retry selected" }
                button type="submit" name="action" value="delete" class="danger" { "Delete selected" }
                @if set != JobSet::Dead { button type="submit" name="action" value="kill" class="danger" { "Kill selected" } }
                " · "
                button type="submit" name="action" value="retry_all" data-confirm="Retry every job in this set?" { "Retry all" }
                button type="submit" name="action" value="delete_all" class="danger" data-confirm="Delete every job in this set?" { "Delete all" }
            }
            table {
                thead { tr { th { input type="checkbox" #select-all aria-label="select all"; } th { (when) } th { "Class" } th { "Args" } th { "Queue" } th { "Error" } th { "" } } }
                tbody {
                    @for entry in &entries {
                        @match entry.job() {
                            Some(job) => {
                                @let key = format!("{}|{}", entry.score, job.jid_str());
                                @let detail = format!("{base}/job/{}?score={}", urlencode(job.jid_str()), entry.score);
                                tr {
                                    td { input type="checkbox" name="entry" value=(key); }
                                    td { a href=(detail) { (time(entry.score)) } }
                                    td { (job.display_class()) }
                                    td.args { code { (args_text(&job)) } }
                                    td { (job.queue_name()) }
                                    td.error { (job.str_field("error_class").unwrap_or("")) @if let Some(m) = job.str_field("error_message") { ": " (crate::job::safe_string(m, 200)) } }
                                    td.actions { a href=(detail) { "details" } }
                                }
                            },
                            None => tr { td colspan="7" { "unparseable entry at " (time(entry.score)) } },
                        }
                    }
                }
            }
        }
        @if search.is_none() { (pager(&base, page, total)) }
        @if let (Some(q), Some(next)) = (search, next.filter(|n| *n < total)) {
            p.pager {
                "searched the newest " (next) " of " (total) " · "
                a href=(format!("{base}?q={}&from={next}", urlencode(q))) { "search further →" }
            }
        }
    };
    Ok(layout(set_title(&name), &base, &csrf, body))
}

pub(crate) async fn job(
    Extension(csrf): Extension<CsrfToken>,
    state: axum::extract::State<State>,
    Path((name, jid)): Path<(String, String)>,
    Query(params): Params,
) -> PageResult {
    let set = set_of(&name)?;
    let entry = match params.get("score").and_then(|s| s.parse::<f64>().ok()) {
        Some(score) => state.api.entry_at(set, score, &jid).await?,
        None => state.api.find_recent_in_set(set, &jid).await?,
    };
    let Some(entry) = entry else {
        return Err(WebError(
            StatusCode::NOT_FOUND,
            format!(
                "job {jid} is no longer in {name}, or not among its newest {} entries (search the set's page further)",
                crate::api::SEARCH_SCAN_MAX
            ),
        ));
    };
    let job = entry.job();
    let attempts = state.api.attempts(&jid).await?;
    let pretty = serde_json::from_slice::<Value>(&entry.raw)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| String::from_utf8_lossy(&entry.raw).into_owned());
    let key = format!("{}|{}", entry.score, jid);
    let actions_url = format!("/sets/{name}/actions");
    let body = html! {
        div.actions {
            (button(&actions_url, "Retry now", &csrf, &[("action", "retry"), ("entry", &key)], false))
            (button(&actions_url, "Delete", &csrf, &[("action", "delete"), ("entry", &key)], true))
            @if set != JobSet::Dead { (button(&actions_url, "Kill", &csrf, &[("action", "kill"), ("entry", &key)], true)) }
            @if let (true, Some(job)) = (set != JobSet::Dead, &job) { (cancel_button(job.jid_str(), &format!("/sets/{}", urlencode(&name)), &csrf)) }
        }
        @if let Some(job) = &job {
            dl {
                dt { "Class" } dd { (job.display_class()) }
                @if job.display_class() != job.class() { dt { "Wrapper" } dd { (job.class()) } }
                dt { "Queue" } dd { (job.queue_name()) }
                dt { "Priority" } dd { (job.priority_level()) }
                @if let Some(seconds) = job.timeout_secs() { dt { "Time limit" } dd { (seconds) " s" } }
                dt { "Jid" } dd { code { (job.jid_str()) } }
                // retry_count counts failures: a retry=0 job that failed
                // once has 1 and was never retried.
                dt { "Failed attempts" } dd { (job.retry_count()) }
                @if let Some(m) = job.str_field("error_message") { dt { "Error" } dd.error { (job.str_field("error_class").unwrap_or("")) ": " (m) } }
            }
            @if let Some(lines) = job.get("error_backtrace").and_then(Value::as_array) {
                h2 { "Backtrace" }
                pre.backtrace { @for line in lines { (line.as_str().unwrap_or("")) "\n" } }
            }
        }
        @if !attempts.is_empty() {
            h2 { "Attempts" }
            table {
                thead { tr { th.num { "#" } th { "Failed at" } th { "Outcome" } th { "Error" } } }
                tbody {
                    @for attempt in &attempts {
                        @let a: Value = serde_json::from_str(attempt).unwrap_or(Value::Null);
                        tr {
                            td.num { (a["attempt"]) }
                            td { (a["failed_at"].as_f64().map(time).unwrap_or_default()) }
                            td { (a["outcome"].as_str().unwrap_or("")) }
                            td.error { (a["error_class"].as_str().unwrap_or("")) ": " (a["error_message"].as_str().unwrap_or("")) }
                        }
                    }
                }
            }
        }
        h2 { "Payload" }
        pre.payload { (pretty) }
    };
    Ok(layout(&format!("Job {jid}"), &format!("/sets/{name}"), &csrf, body))
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

/// `1 process`, `2 processes`.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
