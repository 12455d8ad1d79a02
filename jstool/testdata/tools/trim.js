// The trivial tool of the benchmarks: a single file exporting execute.
export function execute({ text }) {
  return { text: text.trim() };
}
