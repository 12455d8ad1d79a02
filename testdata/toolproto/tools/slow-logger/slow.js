// slow-logger: logs first, then computes for `rounds` rounds of a busy
// loop (the sandbox has no clock to wait on), then returns what it computed.
// Its sidecar manifest gives it fuel for minutes of work.
export function execute({ rounds = 1 }) {
  console.log("computing", { rounds });
  let x = 0;
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < 100000; i++) x = (x * 31 + i) | 0;
  }
  console.log("done");
  return { rounds, x };
}
