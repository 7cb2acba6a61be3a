// DNS rebinding, in real headless Chromium. An attacker's page is loaded
// from http://evil.test:PORT/ (PORT = the dashboard's port); the browser
// resolves evil.test to 127.0.0.2, where a relay serves the attack page
// itself and hands every other request, byte for byte with its Host and
// Origin, to the dashboard on 127.0.0.1:PORT. That is what the dashboard
// sees once the attacker's DNS answer flips to 127.0.0.1: requests the
// browser considers same-origin with the attacker's page. The page tries
// to read the dead jobs' args, take the CSRF token from the page and clear
// the set. It must read nothing and change nothing.
import { once } from "node:events";
import http from "node:http";
import assert from "node:assert/strict";
import { finish, launchChromium, startDemo } from "./demo.mjs";

const { server, base } = await startDemo();
const port = Number(new URL(base).port);

// The attack: read a page, lift its CSRF token, post a destructive form.
const ATTACK = `<!doctype html><title>pending</title><script>
(async () => {
  const result = { reads: [], leaked: false, post: null };
  try {
    const page = await fetch("/sets/dead");
    const text = await page.text();
    result.reads.push(page.status);
    result.leaked = text.includes("4242-declined");
    const token = (text.match(/name="csrf" value="([^"]+)"/) || [])[1] || "";
    const stats = await fetch("/api/stats");
    result.reads.push(stats.status);
    const post = await fetch("/sets/dead/actions", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "action=delete_all&csrf=" + encodeURIComponent(token),
    });
    result.post = post.status;
  } catch (e) {
    result.error = String(e);
  }
  document.title = JSON.stringify(result);
})();
</script>`;

const relayed = [];
const relay = http.createServer((req, res) => {
  if (req.url === "/attack.html") {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(ATTACK);
    return;
  }
  if (req.url === "/favicon.ico") {
    res.writeHead(404);
    res.end();
    return;
  }
  const upstream = http.request(
    { host: "127.0.0.1", port, method: req.method, path: req.url, headers: req.headers },
    (answer) => {
      relayed.push({ method: req.method, path: req.url, host: req.headers.host, status: answer.statusCode });
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", (e) => {
    res.writeHead(502);
    res.end(String(e));
  });
  req.pipe(upstream);
});
relay.listen(port, "127.0.0.2");
await once(relay, "listening");

const browser = await launchChromium(["--host-resolver-rules=MAP evil.test 127.0.0.2"]);
let failed = false;
try {
  const page = await browser.newPage();
  await page.goto(`http://evil.test:${port}/attack.html`);
  await page.waitForFunction(() => document.title !== "pending", null, { timeout: 30_000 });
  const result = JSON.parse(await page.title());
  assert.equal(result.error, undefined, `the attack ran to its end: ${result.error}`);
  // The requests did reach the dashboard, as evil.test, and were refused.
  assert.deepEqual(relayed.map((r) => r.host), Array(3).fill(`evil.test:${port}`));
  assert.deepEqual(relayed.map((r) => r.status), [403, 403, 403]);
  assert.deepEqual(result.reads, [403, 403]);
  assert.equal(result.leaked, false, "no job args read");
  assert.equal(result.post, 403);

  // Nothing changed: the dashboard, under its own name, still lists the
  // three dead jobs.
  const own = await browser.newPage();
  await own.goto(new URL("sets/dead", base).href);
  assert.equal(await own.locator("tbody tr").count(), 3);
  assert.equal(await own.locator("tbody tr", { hasText: "4242-declined" }).count(), 1);
  console.log(`dns rebinding e2e: ok (${relayed.length} requests as evil.test:${port}, all refused)`);
} catch (error) {
  failed = true;
  console.error(error);
  console.error("relayed:", relayed);
} finally {
  relay.close();
  if (!(await finish(browser, server))) failed = true;
}
process.exit(failed ? 1 : 0);
