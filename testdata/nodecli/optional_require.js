// Optional dependencies, as CLIs load them: a require() of a package or
// file the program does not ship throws MODULE_NOT_FOUND when (if ever) it
// runs; one that never runs costs nothing.
const path = require("path");
function optional(name) {
  try {
    return require(name === "color" ? "chalk-not-installed" : "./plugins/not-there");
  } catch (e) {
    console.log(name + ":", e.code, JSON.stringify(e.message.split("\n")[0]),
      e.requireStack && e.requireStack.map((p) => path.relative(process.cwd(), p)));
    return null;
  }
}
function neverCalled() {
  return require("./does-not-exist-either");
}
console.log(optional("color"), optional("plugin"), optional("color"), typeof neverCalled);
import("./not-here.mjs").then(
  () => console.log("imported?"),
  (e) => console.log("import():", e.code, path.basename(e.message.split(" imported from ")[0].replace(/'$/, ""))));
if (process.argv[2] === "--load") require("./missing-at-top-level");
