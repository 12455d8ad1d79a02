// CommonJS with a relative require and a package from node_modules.
const { count } = require("./lib/count");
const pad = require("tiny-pad");
let data = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (c) => { data += c; });
process.stdin.on("end", () => {
  const c = count(data);
  for (const k of Object.keys(c)) process.stdout.write(pad(k, 8) + c[k] + "\n");
});
