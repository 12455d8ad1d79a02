// A runtime error: the script stops with the message and its stack.
function check(n: number): number {
  if (n > 2) {
    throw new RangeError(`too big: ${n}`);
  }
  return n;
}

console.log("before");
check(3);
console.log("after");
