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

  // The plot area inside the axes the page drew (see the SVG's viewBox).
  const LEFT = 52, RIGHT = 708, TOP = 26, BOTTOM = 160, SLOTS = 60;
  const draw = () => {
    const max = Math.max(1, ...points.map((p) => p.processed), ...points.map((p) => p.failed));
    const at = (i) => RIGHT - ((RIGHT - LEFT) * (points.length - 1 - i)) / (SLOTS - 1);
    const y = (v) => BOTTOM - ((BOTTOM - TOP) * v) / max;
    processedLine.setAttribute("points", points.map((p, i) => `${at(i)},${y(p.processed)}`).join(" "));
    failedLine.setAttribute("points", points.map((p, i) => `${at(i)},${y(p.failed)}`).join(" "));
    document.getElementById("chart-max").textContent = max.toFixed(max < 10 ? 1 : 0);
    document.getElementById("chart-mid").textContent = (max / 2).toFixed(max < 10 ? 1 : 0);
    const now = points[points.length - 1];
    label.textContent = now ? `now: ${now.processed.toFixed(1)} processed/s · ${now.failed.toFixed(1)} failed/s` : "";
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
        if (points.length > SLOTS) points.shift();
        draw();
      }
      last = stats;
      const shown = {
        processed: stats.processed,
        failed: stats.failed,
        "processed-today": stats.processed_today,
        "failed-today": stats.failed_today,
        expired: stats.expired,
        "expired-today": stats.expired_today,
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
