// What the browser tests share: the web_demo example started on a free
// port (its own private Redis, seeded data) and stopped, and Debian's
// Chromium launched headless through playwright-core.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Starts web_demo; resolves to { server, base } once it prints its URL. */
export async function startDemo() {
  const demo = path.join(root, "target/debug/examples/web_demo");
  const server = spawn(demo, ["--port", "0"], { stdio: ["ignore", "pipe", "inherit"] });
  const firstLine = await Promise.race([
    once(createInterface({ input: server.stdout }), "line").then(([line]) => line),
    new Promise((_, reject) => setTimeout(() => reject(new Error("web_demo did not start in 60 s")), 60_000)),
  ]);
  return { server, base: firstLine.replace("cogworker web: ", "").trim() };
}

/** Headless Chromium with `extraArgs` added to the quiet defaults. */
export function launchChromium(extraArgs = []) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", ...extraArgs],
  });
}

/** Closes the browser, stops web_demo; true if it exited 0. */
export async function finish(browser, server) {
  await browser.close();
  server.kill("SIGTERM");
  const [code] = await once(server, "exit");
  if (code !== 0) console.error(`web_demo exited with ${code}`);
  return code === 0;
}
