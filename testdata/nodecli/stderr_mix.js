// stdout and stderr interleaved, through the console and the streams, and
// an exit status set by process.exitCode.
console.log("line one");
console.error("warning: something odd");
process.stderr.write("more on stderr\n");
console.log("line", 2, true);
console.warn("last warning");
process.exitCode = 2;
