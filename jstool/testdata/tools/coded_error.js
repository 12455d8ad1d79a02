// Logs at every level, then throws what its input says: an Error carrying
// the tool protocol's code and recoverable properties, a plain Error, or a
// value that is not an Error.
export function execute({ code, recoverable, plain }) {
  console.debug("debugging", { code: code ?? null });
  console.log("step", 1, "of", 2);
  console.warn("careful");
  console.error("about to fail", [1, 2]);
  if (plain !== undefined) throw plain;
  const e = new Error("PAT expired");
  if (code !== undefined) e.code = code;
  if (recoverable !== undefined) e.recoverable = recoverable;
  throw e;
}
