// The order in which MessagePort messages, timers, immediates, promise
// jobs and process.nextTick callbacks run. Node's loop runs, each
// iteration, the due timers, then the poll phase (messages: each receiving
// port in the order it was created, a port's queue to its end, the ticks
// and jobs after each message), then the check phase (immediates), then
// the close events. So that node's order does not depend on how long
// anything takes, a timer is only ever set when nothing else is waiting
// or when what is waiting comes first in any case.
export function execute() {
  const log = [];
  const a = new MessageChannel();
  const b = new MessageChannel();
  return new Promise((resolve) => {
    a.port1.onmessage = (e) => {
      log.push("a:" + e.data);
      Promise.resolve().then(() => log.push("job after a:" + e.data));
      process.nextTick(() => log.push("tick after a:" + e.data));
      if (e.data === "1") {
        a.port2.postMessage("3"); // the same port: this poll phase
        b.port2.postMessage("y"); // a port after it: this poll phase too
        setImmediate(() => log.push("immediate from a:1"));
      }
      if (e.data === "5") {
        // The check phase of this iteration comes before any timer.
        setTimeout(() => {
          log.push("timer 2");
          a.port2.close();
          b.port1.close();
          resolve(log);
        }, 1);
        setImmediate(() => log.push("immediate from a:5"));
      }
    };
    b.port1.on("message", (data) => {
      log.push("b:" + data);
      if (data === "x") a.port2.postMessage("4"); // a port already passed: the next iteration
    });
    setTimeout(() => {
      log.push("timer 1");
      b.port2.postMessage("x");
      a.port2.postMessage("1");
      a.port2.postMessage("2");
      setImmediate(() => {
        log.push("immediate 1");
        Promise.resolve().then(() => log.push("job after immediate 1"));
        process.nextTick(() => log.push("tick after immediate 1"));
        a.port2.postMessage("5");
      });
      setImmediate(() => log.push("immediate 2"));
      Promise.resolve().then(() => log.push("job after timer 1"));
      process.nextTick(() => log.push("tick after timer 1"));
    }, 1);
  });
}
