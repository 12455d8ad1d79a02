// A rejection handled before the jobs run out is not unhandled.
const p = Promise.reject(new Error("late"));
Promise.resolve().then(() => p.catch((e) => console.log("caught:", e.message)));
setTimeout(() => console.log("done"), 5);
