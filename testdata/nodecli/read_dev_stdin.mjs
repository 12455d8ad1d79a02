// stdin by its path, /dev/stdin, as a Buffer, and through fs.promises and
// the callback API once it is used up.
import { readFileSync, readFile } from "node:fs";
import { readFile as readFileP } from "node:fs/promises";
const buf = readFileSync("/dev/stdin");
console.log(Buffer.isBuffer(buf), buf.length, buf.toString("hex"));
console.log(JSON.stringify(await readFileP("/dev/stdin", "utf8")));
readFile("/dev/stdin", "latin1", (err, s) => console.log(err, JSON.stringify(s)));
