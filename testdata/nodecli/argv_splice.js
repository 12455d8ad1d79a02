// CLIs take their arguments off process.argv, an ordinary array in node.
const args = process.argv.splice(2);
const first = args.shift();
process.argv.push("--added");
console.log(JSON.stringify({ first, rest: args, argv: process.argv.length, last: process.argv[process.argv.length - 1] }));
