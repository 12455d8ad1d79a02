// chatty: logs 12000 lines of 2 bytes each (24000 bytes, within the 64 KiB
// console log), each of which becomes a log event.
export function execute({ lines = 12000 }) {
  for (let i = 0; i < lines; i++) console.log("x");
  return { lines };
}
