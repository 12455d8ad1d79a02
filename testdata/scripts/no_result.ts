// A script without a default export prints only its console output.
console.log("hello from a script");
