export function execute() {
  const keep = [];
  for (;;) keep.push(new ArrayBuffer(1 << 20));
}
