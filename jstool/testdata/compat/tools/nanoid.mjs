import { customAlphabet, customRandom, urlAlphabet } from "nanoid";

// nanoid() draws from crypto.getRandomValues: only a custom, seeded random
// source is compared, and the default's length.
export function execute() {
  let seed = 7;
  const random = (size) => {
    const out = new Uint8Array(size);
    for (let i = 0; i < size; i++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      out[i] = seed & 0xff;
    }
    return out;
  };
  const next = customRandom("abcdef0123456789", 12, random);
  return {
    ids: [next(), next(), next()],
    alphabet: urlAlphabet,
    lengths: [customAlphabet("xyz", 5)().length, customAlphabet("0123456789")(30).length],
  };
}
