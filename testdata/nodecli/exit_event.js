// 'exit' listeners run at process.exit, with the code, and may write.
process.on("exit", (code) => { process.stderr.write("exiting with " + code + "\n"); });
let data = "";
process.stdin.on("data", (c) => { data += c; });
process.stdin.on("end", () => {
  const n = JSON.parse(data).n;
  process.stdout.write(String(n * n) + "\n");
  process.exit(n > 10 ? 5 : 0);
});
