// Logs far more than the log keeps.
export function execute() {
  for (let i = 0; i < 10000; i++) console.log("line " + i + " " + "x".repeat(20));
  return { done: true };
}
