// stdin read with fs.readSync in a loop (as synchronous prompt libraries
// do): the bytes, however many reads they took.
const fs = require("fs");
const buf = Buffer.alloc(7);
const parts = [];
let n;
while ((n = fs.readSync(0, buf, 0, buf.length, null)) > 0) parts.push(Buffer.from(buf.subarray(0, n)));
const all = Buffer.concat(parts).toString("utf8");
console.log(all.length, JSON.stringify(all.toUpperCase()));
console.log("at the end:", fs.readSync(0, buf), fs.readSync(0, buf, { offset: 2 }));
