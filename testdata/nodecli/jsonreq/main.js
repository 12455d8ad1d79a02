// A require made by module.createRequire loads a package's JSON, as ES
// module CLIs load their data (svgo's css-tree does).
import { createRequire } from "node:module";
import { dirname, relative } from "node:path";
import { fileURLToPath } from "node:url";
const require = createRequire(import.meta.url);
const table = require("./data/table.json");
console.log(table.name, table.rows.reduce((a, b) => a + b, 0), require("./data/table.json") === table);
console.log(relative(dirname(fileURLToPath(import.meta.url)), require.resolve("./data/table.json")));
try {
  require("./data/missing.json");
} catch (e) {
  console.log(e.code);
}
