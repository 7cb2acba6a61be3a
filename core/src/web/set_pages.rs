//! The pages of the schedule, retry and dead sets: a page of entries
//! with their actions, and one job's page (its payload, error, attempts).

use super::pages::{
    args_text, button, cancel_button, layout, page_number, pager, time, urlencode, PageResult, Params, WebError,
    PAGE_SIZE,
};
use super::security::{CsrfToken, CSRF_FIELD};
use super::State;
use crate::api::{JobSet, SetEntry};
use axum::extract::{Extension, Path, Query};
use axum::http::StatusCode;
use maud::html;
use serde_json::Value;

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
    let progress = state.api.progress(&jid).await?;
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
                @if let Some(report) = &progress { dt { "Progress" } dd { (super::pages::progress_bar(report)) } }
                @if let Some(cursor) = job.cursor() { dt { "Cursor" } dd { code { (cursor.to_string()) } } }
            }
            @if let Some(lines) = job.get("error_backtrace").and_then(crate::sidekiq::backtrace_lines) {
                h2 { "Backtrace" }
                pre.backtrace { @for line in lines { (line) "\n" } }
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
                            td { (crate::sidekiq::epoch_seconds(&a["failed_at"]).map(time).unwrap_or_default()) }
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
