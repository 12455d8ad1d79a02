// The event loop's order: synchronous code, process.nextTick, promise
// reactions, setImmediate, then timers by their deadline; async/await with
// sleeps on the clock.
const log = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
setTimeout(() => log.push("timeout 20"), 20);
setTimeout(() => log.push("timeout 5"), 5);
setImmediate(() => log.push("immediate"));
Promise.resolve().then(() => log.push("promise"));
process.nextTick(() => log.push("nextTick"));
log.push("sync");
(async () => {
  await sleep(50);
  log.push("after sleep");
  process.stdout.write(JSON.stringify(log) + "\n");
})();
