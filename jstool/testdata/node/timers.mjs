// Timers on the virtual clock.
import { setTimeout as sleep } from "node:timers/promises";

export const order = {
  async execute() {
    const seen = [];
    const t0 = Date.now();
    setTimeout(() => seen.push("c30"), 30);
    setTimeout(() => seen.push("a10"), 10);
    setTimeout(() => seen.push("b10"), 10);
    setTimeout(() => seen.push("zero"), 0);
    const cancelled = setTimeout(() => seen.push("cancelled"), 5);
    clearTimeout(cancelled);
    let n = 0;
    const iv = setInterval(() => { seen.push("iv" + ++n); if (n === 3) clearInterval(iv); }, 7);
    setTimeout(() => seen.push("unref"), 100).unref();
    await sleep(50);
    return { seen, elapsed: Date.now() - t0 };
  },
};

export const sleepy = {
  async execute() {
    const t0 = Date.now();
    await sleep(1000);
    return { elapsed: Date.now() - t0, now: new Date().toISOString() };
  },
};

// An interval that never stops while the result never settles: the loop
// runs until the fuel runs out.
export const forever = {
  execute() {
    setInterval(() => {}, 1000);
    return new Promise(() => {});
  },
};

// An error thrown by a timer callback fails the execution.
export const throws = {
  execute() {
    return new Promise(() => setTimeout(() => { throw new RangeError("from a timer"); }, 5));
  },
};

// The result settles while a timer is pending: the execution ends there.
export const settles = {
  execute() {
    setTimeout(() => { throw new Error("never fires"); }, 10);
    return { done: true };
  },
};
