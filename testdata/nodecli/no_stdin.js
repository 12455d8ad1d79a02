// A program that never reads its stdin ends when its work is done.
const n = Number(process.argv[2] || 10);
const fib = [0, 1];
while (fib.length < n) fib.push(fib[fib.length - 1] + fib[fib.length - 2]);
process.stdout.write(JSON.stringify(fib.slice(0, n)) + "\n");
