//! Bar charts drawn on the server as SVG (no script: the CSP forbids inline
//! code, and a static picture needs none), each with both axes labelled,
//! units, and a legend.

use maud::{html, Markup};

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 52.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 26.0;
const BOTTOM: f64 = 40.0;
/// Room a character of an 11px tick label takes, with some to spare
/// (sans-serif digits are about 0.55 em wide, an `m` 0.85 em).
const TICK_CHAR_W: f64 = 7.0;
/// Space kept between two labels on one row.
const LABEL_GAP: f64 = 10.0;
/// The second row of staggered x labels sits this much lower.
const STAGGER: f64 = 12.0;

/// One series: a name for the legend, a CSS class for its colour, a value
/// per bar.
pub(crate) struct Series<'a> {
    pub name: &'a str,
    pub class: &'a str,
    pub values: Vec<u64>,
}

/// Bars side by side per slot (`labels`: one per slot, some left empty to
/// thin them out), the y axis from 0 to the largest value in `unit`.
pub(crate) fn bars(title: &str, labels: &[String], series: &[Series<'_>], x_unit: &str, y_unit: &str) -> Markup {
    let slots = labels.len().max(1);
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let slot_w = plot_w / slots as f64;
    let bar_w = (slot_w * 0.8 / series.len().max(1) as f64).max(0.5);
    let y = |v: u64| TOP + plot_h - plot_h * v as f64 / max as f64;
    let ticks = [0, max / 2, max];
    // Labels wider than the room between them would run together
    // ("100ms250ms500ms"): every other one goes on a second row, and the
    // chart grows to fit it.
    let shown: Vec<usize> = (0..labels.len()).filter(|&slot| !labels[slot].is_empty()).collect();
    let closest = shown.windows(2).map(|pair| pair[1] - pair[0]).min().unwrap_or(slots);
    let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as f64 * TICK_CHAR_W;
    let staggered = widest + LABEL_GAP > closest as f64 * slot_w;
    let height = if staggered { HEIGHT + STAGGER } else { HEIGHT };
    let second_row = |slot: usize| staggered && shown.iter().position(|&s| s == slot).is_some_and(|k| k % 2 == 1);
    let label_y = |slot: usize| TOP + plot_h + 14.0 + if second_row(slot) { STAGGER } else { 0.0 };
    html! {
        svg.chart viewBox=(format!("0 0 {WIDTH} {height}")) role="img" aria-label=(title) {
            title { (title) }
            // Legend, top left.
            @for (i, s) in series.iter().enumerate() {
                rect class=(s.class) x=(LEFT + 130.0 * i as f64) y="6" width="10" height="10" {}
                text.legend x=(LEFT + 14.0 + 130.0 * i as f64) y="15" { (s.name) }
            }
            // Y axis: gridlines and values.
            @for tick in ticks {
                line.grid x1=(LEFT) x2=(WIDTH - RIGHT) y1=(y(tick)) y2=(y(tick)) {}
                text.tick x=(LEFT - 6.0) y=(y(tick) + 4.0) text-anchor="end" { (tick) }
            }
            text.axis transform=(format!("translate(12 {}) rotate(-90)", TOP + plot_h / 2.0)) text-anchor="middle" { (y_unit) }
            // Bars.
            @for (i, s) in series.iter().enumerate() {
                @for (slot, value) in s.values.iter().enumerate() {
                    @if *value > 0 {
                        rect class=(s.class)
                            x=(format!("{:.1}", LEFT + slot_w * slot as f64 + slot_w * 0.1 + bar_w * i as f64))
                            y=(format!("{:.1}", y(*value)))
                            width=(format!("{bar_w:.1}"))
                            height=(format!("{:.1}", TOP + plot_h - y(*value))) {
                            title { (labels.get(slot).map(String::as_str).unwrap_or("")) ": " (value) " " (s.name) }
                        }
                    }
                }
            }
            // X axis: baseline, labels, unit.
            line.axis x1=(LEFT) x2=(WIDTH - RIGHT) y1=(TOP + plot_h) y2=(TOP + plot_h) {}
            @for (slot, label) in labels.iter().enumerate() {
                @if !label.is_empty() {
                    text.tick x=(format!("{:.1}", LEFT + slot_w * (slot as f64 + 0.5))) y=(label_y(slot)) text-anchor="middle" { (label) }
                }
            }
            text.axis x=(LEFT + plot_w / 2.0) y=(height - 4.0) text-anchor="middle" { (x_unit) }
        }
    }
}

/// Every `n`th label kept (the rest empty) so at most `room` show.
pub(crate) fn thinned(labels: Vec<String>, room: usize) -> Vec<String> {
    let every = labels.len().div_ceil(room.max(1)).max(1);
    labels
        .into_iter()
        .enumerate()
        .map(|(i, label)| if i % every == 0 { label } else { String::new() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_wider_than_their_slots_go_on_two_rows() {
        let series = [Series {
            name: "executions",
            class: "processed",
            values: vec![1; 16],
        }];
        // The run-time histogram's own labels ("100ms", "250ms", ">5min"): they ran together.
        let wide = crate::web::metrics_pages::bucket_labels();
        let svg = bars("t", &wide, &series, "run time", "executions").into_string();
        let rows: std::collections::BTreeSet<&str> = svg
            .split("class=\"tick\"")
            .skip(4) // the three y ticks, then the x labels
            .filter_map(|t| t.split("y=\"").nth(1)?.split('"').next())
            .collect();
        assert_eq!(rows.len(), 2, "two rows of x labels: {rows:?}");
        assert!(
            svg.contains(&format!("viewBox=\"0 0 {WIDTH} {}\"", HEIGHT + STAGGER)),
            "{svg}"
        );
        let narrow: Vec<String> = (0..16).map(|i| i.to_string()).collect();
        let svg = bars("t", &narrow, &series, "run time", "executions").into_string();
        assert!(
            svg.contains(&format!("viewBox=\"0 0 {WIDTH} {HEIGHT}\"")),
            "one row: {svg}"
        );
        // The per-minute chart: 60 slots, a time every 8th: wide labels, but
        // far apart.
        let minutes = [Series {
            name: "succeeded",
            class: "processed",
            values: vec![1; 60],
        }];
        let times = thinned((0..60).map(|m| format!("21:{m:02}")).collect(), 8);
        let svg = bars("t", &times, &minutes, "minute (UTC)", "executions").into_string();
        assert!(
            svg.contains(&format!("viewBox=\"0 0 {WIDTH} {HEIGHT}\"")),
            "one row: {svg}"
        );
    }

    #[test]
    fn a_chart_has_axes_units_a_legend_and_escaped_text() {
        let labels = vec!["a".to_string(), "<b>".to_string()];
        let series = [Series {
            name: "processed",
            class: "processed",
            values: vec![3, 0],
        }];
        let svg = bars("t", &labels, &series, "minute (UTC)", "jobs per minute").into_string();
        assert!(svg.contains("jobs per minute") && svg.contains("minute (UTC)"), "{svg}");
        assert!(svg.contains("class=\"legend\"") && svg.contains(">processed<"), "{svg}");
        assert!(svg.contains("&lt;b&gt;") && !svg.contains("<b>"), "{svg}");
        assert_eq!(
            svg.matches("<rect class=\"processed\"").count(),
            2,
            "legend swatch and one bar: {svg}"
        );
        assert_eq!(
            thinned((0..10).map(|i| i.to_string()).collect(), 4),
            ["0", "", "", "3", "", "", "6", "", "", "9"]
        );
    }
}
