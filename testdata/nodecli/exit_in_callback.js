// process.exit in a timer callback: what follows it never runs, nor do
// later timers.
process.stdout.write("starting\n");
setTimeout(() => {
  process.stdout.write("partial ");
  process.exit(4);
  process.stdout.write("never\n");
}, 10);
setTimeout(() => { process.stdout.write("never either\n"); }, 50);
