// SHA-3-256 of kb KiB (default 300) of fixed bytes, in pure JavaScript
// (js-sha3): ordinary heavy work that must complete at a JS tool's default
// limits, whatever the machine's load.
import { sha3_256 } from "js-sha3";

export function execute({ kb = 300 }) {
  const data = new Uint8Array(kb * 1024);
  for (let i = 0; i < data.length; i++) data[i] = (i * 31 + 7) & 255;
  return { kb, sha3_256: sha3_256(data) };
}
