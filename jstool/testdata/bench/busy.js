// A tool that keeps its VM busy for n loop iterations without allocating, so
// that many executions are alive at once (bench/jsbench's memory per
// concurrent VM).
export function execute({ n }) {
  let x = 0;
  for (let i = 0; i < n; i++) x = (x + i) | 0;
  return { n, x };
}
