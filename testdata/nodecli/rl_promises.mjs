// readline/promises: question() returns the answer; prompt() and the
// 'line' event after the questions.
import * as readline from "node:readline/promises";
import { stdin as input, stdout as output } from "node:process";
const rl = readline.createInterface({ input, output, prompt: "cmd> " });
const who = await rl.question("Who? ");
console.log(`Hi ${who}`);
rl.prompt();
rl.on("line", (line) => {
  if (line === "quit") { rl.close(); return; }
  console.log(`[${line.split("").reverse().join("")}]`);
  rl.prompt();
});
rl.on("close", () => console.log("closed"));
