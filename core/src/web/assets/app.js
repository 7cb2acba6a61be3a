// cogworker dashboard: the live throughput chart, "select all" and
// confirmations. Loaded as a file (no inline script: the CSP forbids it).
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("[data-confirm]")) {
    button.addEventListener("click", (event) => {
      if (!window.confirm(button.getAttribute("data-confirm"))) event.preventDefault();
    });
  }
  const all = document.getElementById("select-all");
  if (all) {
    all.addEventListener("change", () => {
      for (const box of document.querySelectorAll('input[name="entry"]')) box.checked = all.checked;
    });
  }
  const chart = document.getElementById("chart");
  if (chart) startChart(chart);
});

function startChart(svg) {
  const NS = "http://www.w3.org/2000/svg";
  const points = [];
  let last = null;
  const line = (cls) => {
    const el = document.createElementNS(NS, "polyline");
    el.setAttribute("class", cls);
    svg.appendChild(el);
    return el;
  };
  const processedLine = line("processed");
  const failedLine = line("failed");
  const label = document.getElementById("chart-label");

  const draw = () => {
    const max = Math.max(1, ...points.map((p) => p.processed), ...points.map((p) => p.failed));
    const at = (i) => (600 * i) / Math.max(points.length - 1, 1);
    const y = (v) => 155 - (145 * v) / max;
    processedLine.setAttribute("points", points.map((p, i) => `${at(i)},${y(p.processed)}`).join(" "));
    failedLine.setAttribute("points", points.map((p, i) => `${at(i)},${y(p.failed)}`).join(" "));
    const now = points[points.length - 1];
    label.textContent = now ? `${now.processed.toFixed(1)} processed/s · ${now.failed.toFixed(1)} failed/s (max ${max.toFixed(1)})` : "";
  };

  const sample = async () => {
    try {
      const response = await fetch("/api/stats", { credentials: "same-origin" });
      const stats = await response.json();
      if (last) {
        const seconds = Math.max(0.001, stats.time - last.time);
        points.push({
          processed: (stats.processed - last.processed) / seconds,
          failed: (stats.failed - last.failed) / seconds,
        });
        if (points.length > 60) points.shift();
        draw();
      }
      last = stats;
      const shown = {
        processed: stats.processed,
        failed: stats.failed,
        "processed-today": stats.processed_today,
        "failed-today": stats.failed_today,
        busy: stats.busy,
        "dead-count": stats.dead,
      };
      for (const [id, value] of Object.entries(shown)) {
        const el = document.getElementById(id);
        if (el) el.textContent = String(value);
      }
    } catch (e) {
      label.textContent = "stats unavailable";
    }
  };
  sample();
  setInterval(sample, 2000);
}
