// Top-level await with neither import nor export: a toolscript is a module,
// for the type check as for the engine.
const half: number = await Promise.resolve(21);
console.log(half * 2);
