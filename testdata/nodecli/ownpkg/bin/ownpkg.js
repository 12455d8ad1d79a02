#!/usr/bin/env node
// Reads its own package.json the ways CLIs do, and, with --other, a file
// of its tree that wasmgate does not embed.
const fs = require("fs");
const path = require("path");
const pkgPath = path.join(__dirname, "..", "package.json");
const pkg = JSON.parse(fs.readFileSync(pkgPath, "utf8"));
console.log(pkg.name, "v" + pkg.version);
console.log("exists:", fs.existsSync(pkgPath), "file:", fs.statSync(pkgPath).isFile(), "dir:", fs.statSync(path.dirname(pkgPath)).isDirectory());
console.log("bytes:", fs.readFileSync(pkgPath).length === Buffer.byteLength(fs.readFileSync(pkgPath, "utf8")));
fs.readFile(pkgPath, "utf8", (err, text) => {
  console.log("callback:", err, JSON.parse(text).description);
  fs.promises.readFile(new URL("file://" + pkgPath)).then((buf) => {
    console.log("promise:", JSON.parse(buf.toString()).version);
    if (process.argv[2] === "--other") {
      try {
        fs.readFileSync(path.join(__dirname, "..", "data", "notes.txt"), "utf8");
        console.log("read");
      } catch (e) {
        console.log(e.code, e.permission, e.resource === path.join(__dirname, "..", "data", "notes.txt"));
        process.exitCode = 2;
      }
    }
  });
});
