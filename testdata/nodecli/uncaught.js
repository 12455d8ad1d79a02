// An uncaught exception: the Error's stack on stderr, exit status 1, after
// what was written before it.
let data = "";
process.stdin.on("data", (c) => { data += c; });
process.stdin.on("end", () => {
  process.stdout.write("checking\n");
  const input = JSON.parse(data);
  if (!Array.isArray(input.items)) throw new TypeError("items must be an array, got " + typeof input.items);
  process.stdout.write("ok\n");
});
