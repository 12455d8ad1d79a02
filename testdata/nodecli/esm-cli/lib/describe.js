import path from "node:path";
// A module's own import.meta, not its importer's.
export const describe = () =>
  "lib: " + path.relative(process.cwd(), import.meta.filename) + " " + path.relative(process.cwd(), new URL(import.meta.url).pathname);
