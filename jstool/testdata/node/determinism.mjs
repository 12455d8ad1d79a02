// Everything random or timed in the Node profile, for the cross-engine
// determinism test: the same input must give the same output and fuel on
// every engine and run, another input other random values.
import { randomBytes, randomUUID, randomInt, getRandomValues, createHash, webcrypto } from "node:crypto";
import { setTimeout as sleep, setImmediate as immediate } from "node:timers/promises";
import zlib from "node:zlib";

export async function execute(params) {
  const t0 = Date.now();
  const p0 = performance.now();
  const order = [];
  const interval = setInterval(() => order.push("interval@" + (Date.now() - t0)), 400);
  setTimeout(() => order.push("t1000@" + (Date.now() - t0)), 1000);
  setTimeout(() => { order.push("t250@" + (Date.now() - t0)); }, 250);
  await immediate();
  order.push("immediate@" + (Date.now() - t0));
  await sleep(1300);
  clearInterval(interval);
  const digest = await webcrypto.subtle.digest("SHA-256", new TextEncoder().encode(params.text));
  return {
    random: {
      bytes: randomBytes(8).toString("hex"),
      uuid: randomUUID(),
      int: randomInt(1000000),
      values: Array.from(getRandomValues(new Uint16Array(3))),
      globalUuid: crypto.randomUUID(),
      math: Math.random(),
    },
    time: { slept: Date.now() - t0, now: new Date().toISOString(), perf: performance.now() - p0, hr: process.hrtime() },
    order,
    sha256: createHash("sha256").update(params.text).digest("hex"),
    subtle: Buffer.from(digest).toString("hex"),
    gzip: zlib.gzipSync(params.text.repeat(20)).toString("base64"),
    inflated: zlib.inflateSync(zlib.deflateSync(params.text)).toString(),
  };
}
