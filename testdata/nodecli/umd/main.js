// require() of a UMD build gives its exports, and a built-in required
// where the bundler cannot see a require (dart2js's self.require("url"))
// is there at run time.
const lib = require("./lib.js");
console.log(typeof lib.twice, lib.twice(21), typeof globalThis.umdLib);
const url = (typeof __webpack_require__ === "function" ? null : require)("url");
console.log(url.pathToFileURL("/a b").href);
