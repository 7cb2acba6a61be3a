//! The Metrics pages: job classes ranked by the time they took over a
//! span (the last hour by default, up to the 72 h kept), and one class's
//! executions and failures per minute and its run-time histogram.

use super::charts::{bars, thinned, Series};
use super::pages::{layout, PageResult};
use super::security::CsrfToken;
use super::State;
use crate::metrics::{ClassMetrics, BUCKETS_SECS};
use crate::printable::shown;
use axum::extract::{Extension, Query};
use maud::{html, Markup};
use std::collections::HashMap;

/// The spans offered, in minutes.
const SPANS: [(u64, &str); 4] = [(60, "1 hour"), (360, "6 hours"), (1440, "24 hours"), (4320, "72 hours")];

fn span(params: &HashMap<String, String>) -> u64 {
    params
        .get("minutes")
        .and_then(|m| m.parse::<u64>().ok())
        .filter(|m| SPANS.iter().any(|(s, _)| s == m))
        .unwrap_or(60)
}

fn query(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

fn span_links(path: &str, class: Option<&str>, minutes: u64) -> Markup {
    let href = |m: u64| {
        let m = m.to_string();
        match class {
            Some(class) => format!("{path}?{}", query(&[("name", class), ("minutes", &m)])),
            None => format!("{path}?{}", query(&[("minutes", &m)])),
        }
    };
    html! {
        p.spans {
            "Last: "
            @for (m, label) in SPANS {
                a href=(href(m)) class=[(m == minutes).then_some("active")] { (label) } " "
            }
        }
    }
}

/// Seconds as people read them.
pub(crate) fn duration(secs: f64) -> String {
    match secs {
        s if s < 0.001 => format!("{:.0} µs", s * 1e6),
        s if s < 1.0 => format!("{:.1} ms", s * 1e3),
        s if s < 120.0 => format!("{s:.2} s"),
        s if s < 7200.0 => format!("{:.1} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    }
}

pub(crate) async fn classes(
    Extension(csrf): Extension<CsrfToken>,
    state: axum::extract::State<State>,
    Query(params): Query<HashMap<String, String>>,
) -> PageResult {
    let minutes = span(&params);
    let ranked = state.api.class_metrics(minutes).await?;
    let body = html! {
        (span_links("/classes", None, minutes))
        p.sub { "Executions that finished (succeeded or failed), by job class, ranked by the time they took. Written by each worker once a second." }
        @if ranked.is_empty() { p.empty { "No job finished in this span." } } @else {
            table {
                thead { tr { th { "Class" } th.num { "Processed" } th.num { "Failed" } th.num { "Failure rate" } th.num { "Total time" } th.num { "Mean" } } }
                tbody {
                    @for class in &ranked {
                        tr {
                            td {
                                // As a pusher wrote it: escaped, and linked
                                // only while a URL can carry it.
                                @if class.class.chars().count() <= crate::job::CLASS_MAX_LEN {
                                    a href=(format!("/class?{}", query(&[("name", &class.class), ("minutes", &minutes.to_string())]))) { (shown(&class.class)) }
                                } @else { (shown(&class.class)) }
                            }
                            td.num { (class.processed) }
                            td.num { (class.failed) }
                            td.num { (format!("{:.1} %", 100.0 * class.failed as f64 / class.processed.max(1) as f64)) }
                            td.num { (duration(class.total_secs)) }
                            td.num { (duration(class.mean_secs())) }
                        }
                    }
                }
            }
        }
    };
    Ok(layout("Metrics", "/classes", &csrf, body))
}

pub(crate) async fn class(
    Extension(csrf): Extension<CsrfToken>,
    state: axum::extract::State<State>,
    Query(params): Query<HashMap<String, String>>,
) -> PageResult {
    let minutes = span(&params);
    let class = params.get("name").cloned().unwrap_or_default();
    let (total, series) = state.api.class_metrics_series(&class, minutes).await?;
    // Shown as a pusher wrote it, but with bidi overrides and control
    // characters as escapes: they would reorder the page around them.
    let name = shown(&class);
    let labels = thinned(
        series
            .iter()
            .map(|m| {
                chrono::DateTime::from_timestamp(m.at as i64, 0)
                    .map(|t| t.format("%H:%M").to_string())
                    .unwrap_or_default()
            })
            .collect(),
        8,
    );
    let per_minute = bars(
        &format!("{name}: executions per minute"),
        &labels,
        &[
            Series {
                name: "succeeded",
                class: "processed",
                values: series.iter().map(|m| m.processed - m.failed).collect(),
            },
            Series {
                name: "failed",
                class: "failed",
                values: series.iter().map(|m| m.failed).collect(),
            },
        ],
        "minute (UTC)",
        "executions / minute",
    );
    let histogram = bars(
        &format!("{name}: run time histogram"),
        &bucket_labels(),
        &[Series {
            name: "executions",
            class: "processed",
            values: total.histogram.clone(),
        }],
        "run time (at most)",
        "executions",
    );
    let body = html! {
        p { a href=(format!("/classes?minutes={minutes}")) { "← all classes" } }
        (span_links("/class", Some(&class), minutes))
        (summary(&total))
        h2 { "Executions per minute" }
        (per_minute)
        h2 { "Run time" }
        (histogram)
    };
    Ok(layout(&format!("Metrics: {name}"), "/classes", &csrf, body))
}

fn summary(total: &ClassMetrics) -> Markup {
    html! {
        section.cards {
            div.card { span.label { "Processed" } span.value { (total.processed) } }
            div.card { span.label { "Failed" } span.value { (total.failed) } }
            div.card { span.label { "Total time" } span.value { (duration(total.total_secs)) } }
            div.card { span.label { "Mean" } span.value { (duration(total.mean_secs())) } }
        }
    }
}

/// The histogram's slots, short enough to sit under their bars.
pub(crate) fn bucket_labels() -> Vec<String> {
    let short = |secs: f64| match secs {
        s if s < 1.0 => format!("{}ms", s * 1000.0),
        s if s < 60.0 => format!("{s}s"),
        s => format!("{}min", s / 60.0),
    };
    BUCKETS_SECS
        .iter()
        .map(|b| short(*b))
        .chain(std::iter::once(format!(
            ">{}",
            short(BUCKETS_SECS[BUCKETS_SECS.len() - 1])
        )))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_buckets_read_naturally() {
        assert_eq!(duration(0.0005), "500 µs");
        assert_eq!(duration(0.25), "250.0 ms");
        assert_eq!(duration(2.5), "2.50 s");
        let all = "1ms 2.5ms 5ms 10ms 25ms 50ms 100ms 250ms 500ms 1s 2.5s 5s 10s 30s 1min 5min >5min";
        assert_eq!(bucket_labels().join(" "), all);
        assert_eq!(bucket_labels().len(), crate::metrics::SLOTS);
    }
}
