// rl.question over piped stdin: the prompt goes to stdout, the answer is
// the next line; the interface is closed after the last question.
const readline = require("readline");
const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
rl.question("Name? ", (name) => {
  rl.question("Favourite number? ", (n) => {
    console.log(`\n${name.trim()} likes ${Number(n) * 2 / 2}.`);
    rl.close();
  });
});
rl.on("close", () => console.log("bye"));
