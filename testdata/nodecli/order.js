// The event loop's order: synchronous code, process.nextTick, promise
// reactions, setImmediate, then timers by their deadline; async/await with
// sleeps on the clock. The timers' delays leave node the time to reach its
// event loop before the first one is due, even on a loaded machine (with
// 5 ms, node itself ran "timeout 5" before "immediate" under load).
const log = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
setTimeout(() => log.push("timeout 200"), 200);
setTimeout(() => log.push("timeout 100"), 100);
setImmediate(() => log.push("immediate"));
Promise.resolve().then(() => log.push("promise"));
process.nextTick(() => log.push("nextTick"));
log.push("sync");
(async () => {
  await sleep(300);
  log.push("after sleep");
  process.stdout.write(JSON.stringify(log) + "\n");
})();
