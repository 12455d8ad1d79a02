// The trivial tool of the latency benchmarks (jstool/bench_test.go,
// bench/jsbench): almost no guest work, so what is measured is the cost of a
// fresh VM per call.
export function execute({ text }) { return { text: text.trim() }; }
