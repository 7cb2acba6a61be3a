// End-to-end: the dashboard in real headless Chromium (Debian's
// /usr/bin/chromium driven by playwright-core). Starts the web_demo example
// (its own private Redis, seeded data), then: the dashboard renders and its
// live chart draws; a dead job whose args hold an HTML/script payload is
// shown as text (no alert, no injected element); a dead job is retried by
// clicking; the Metrics pages render their charts; screenshots go to
// target/dashboard.png and target/metrics.png (or $SCREENSHOT,
// $METRICS_SCREENSHOT).
import path from "node:path";
import assert from "node:assert/strict";
import { finish, launchChromium, root, startDemo } from "./demo.mjs";

const XSS = "<img src=x onerror=alert(1)><script>alert(2)</script>";

const { server, base } = await startDemo();
assert.match(base, /^http:\/\/127\.0\.0\.1:\d+\/$/);

const browser = await launchChromium();
const dialogs = [];
const cspViolations = [];
let failed = false;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on("dialog", async (dialog) => {
    dialogs.push(dialog.message());
    await dialog.dismiss();
  });
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });

  // The dashboard, with its live chart drawn from two samples.
  await page.goto(base);
  assert.equal(await page.locator("main h1").textContent(), "Dashboard");
  await page.waitForFunction(() => {
    const line = document.querySelector("#chart polyline.processed");
    return line && line.getAttribute("points") && line.getAttribute("points").split(" ").length >= 6;
  }, null, { timeout: 30_000 });
  assert.notEqual(await page.locator("#processed").textContent(), "0");
  const screenshot = process.env.SCREENSHOT || path.join(root, "target/dashboard.png");
  await page.screenshot({ path: path.resolve(root, screenshot), fullPage: true });

  assert.equal(await page.locator("#chart text.axis", { hasText: "jobs / s" }).count(), 1, "the chart's y axis is labelled");
  assert.equal(await page.locator("#chart text.legend").count(), 2, "and it has a legend");

  // Metrics: classes ranked by run time; one class's charts, drawn on the
  // server (axes, units, legend), no script needed.
  // (Workers write metrics once a second: the page may need a reload.)
  const classRow = page.locator("main tbody tr", { hasText: "Thumbnail" });
  for (const deadline = Date.now() + 30_000; ; ) {
    await page.goto(new URL("classes", base).href);
    if ((await classRow.count()) === 1) break;
    assert.ok(Date.now() < deadline, "Thumbnail shows on the Metrics page");
    await page.waitForTimeout(250);
  }
  await Promise.all([page.waitForURL(/\/class\?/), classRow.getByRole("link").click()]);
  assert.equal(await page.locator("svg.chart").count(), 2, "per minute and histogram");
  assert.equal(await page.locator("svg.chart text.axis", { hasText: "executions / minute" }).count(), 1);
  assert.equal(await page.locator("svg.chart text.axis", { hasText: "run time (at most)" }).count(), 1);
  const metricsShot = process.env.METRICS_SCREENSHOT || path.join(root, "target/metrics.png");
  await page.screenshot({ path: path.resolve(root, metricsShot), fullPage: true });

  // Dead: the payload is text, never markup.
  await page.goto(new URL("sets/dead", base).href);
  const rows = page.locator("tbody tr");
  assert.equal(await rows.count(), 3);
  const payloadCell = page.locator("td.args code", { hasText: "onerror" });
  assert.equal(await payloadCell.textContent(), JSON.stringify([XSS]));
  assert.equal(await page.locator("main img").count(), 0, "no injected <img>");
  assert.equal(await page.locator("main script").count(), 0, "no injected <script>");
  assert.match(await page.locator("td.error", { hasText: "onerror" }).textContent(), /card <img src=x/);

  // Retry one by clicking: select its row, press "Retry selected".
  const row = rows.filter({ hasText: "4242-declined" });
  await row.locator('input[name="entry"]').check();
  await Promise.all([page.waitForURL(/\/sets\/dead$/), page.getByRole("button", { name: "Retry selected" }).click()]);
  assert.equal(await page.locator("tbody tr").count(), 2);
  assert.equal(await page.locator("tbody tr", { hasText: "4242-declined" }).count(), 0);

  // And one from its detail page.
  await page.locator("tbody tr", { hasText: "5555-expired" }).getByRole("link", { name: "details" }).click();
  assert.match(await page.locator("pre.backtrace").textContent(), /billing\/charge\.rs:42/);
  await Promise.all([page.waitForURL(/\/sets\/dead$/), page.getByRole("button", { name: "Retry now" }).click()]);
  assert.equal(await page.locator("tbody tr").count(), 1);

  assert.deepEqual(dialogs, [], "no script from job data ran");
  assert.deepEqual(cspViolations, [], "the pages need nothing the CSP forbids");
  console.log(`dashboard e2e: ok (screenshot in ${screenshot})`);
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  if (!(await finish(browser, server))) failed = true;
}
process.exit(failed ? 1 : 0);
