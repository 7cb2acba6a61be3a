// `node bench.mjs REDIS_URL JOBS`: JOBS `Queue.add` calls one by one, each
// awaited, then a drain of them by one Worker at concurrency 10 (no-op
// jobs), the way `cogworker bench` measures cogworker. BullMQ's production
// settings from its docs: finished jobs removed automatically (the last
// 1,000 completed and 5,000 failed kept), `maxRetriesPerRequest: null` on
// the worker's connection. Prints one line.
import { Queue, Worker } from 'bullmq';

const [url, jobsText] = process.argv.slice(2);
const jobs = Number(jobsText);
const { hostname, port } = new URL(url);
const connection = { host: hostname, port: Number(port) };
const name = `bench-${process.pid}`;
const queue = new Queue(name, {
  connection,
  defaultJobOptions: { removeOnComplete: { count: 1000 }, removeOnFail: { count: 5000 } },
});

let started = performance.now();
for (let i = 0; i < jobs; i++) {
  await queue.add('noop', { i });
}
const enqueue = jobs / ((performance.now() - started) / 1000);

let done = 0;
started = performance.now();
const worker = new Worker(name, async () => { done += 1; }, {
  connection: { ...connection, maxRetriesPerRequest: null },
  concurrency: 10,
});
await new Promise((resolve) => {
  const check = setInterval(() => {
    if (done >= jobs || performance.now() - started > 600_000) {
      clearInterval(check);
      resolve();
    }
  }, 1);
});
const drain = done / ((performance.now() - started) / 1000);
console.log(`bullmq enqueue 1-by-1 ${enqueue.toFixed(0)} jobs/s, drain ${drain.toFixed(0)} jobs/s`);
await worker.close();
await queue.obliterate({ force: true });
await queue.close();
process.exit(0);
