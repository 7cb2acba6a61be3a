// Sidekiq's Web UI pages as headless Chromium renders them, for
// tests/sidekiq: `node sidekiq_pages.mjs BASE PATH...` loads each
// BASE + PATH and prints one line of JSON, { PATH: the page's visible text }.
import { launchChromium } from "./demo.mjs";

const [base, ...paths] = process.argv.slice(2);
const browser = await launchChromium();
try {
  const page = await browser.newPage();
  const texts = {};
  for (const path of paths) {
    const response = await page.goto(base + path, { waitUntil: "load" });
    if (!response || response.status() !== 200) {
      throw new Error(`${path}: HTTP ${response && response.status()}`);
    }
    texts[path] = await page.innerText("body");
  }
  console.log(JSON.stringify(texts));
} finally {
  await browser.close();
}
