import * as ieee754 from "ieee754";

export function execute() {
  const values = [Math.PI, -0, 1e-310, 65504, 1 / 3];
  const out = {};
  for (const [name, le, len, mant] of [["f64be", false, 8, 52], ["f64le", true, 8, 52], ["f32be", false, 4, 23]]) {
    out[name] = values.map((v) => {
      const buf = new Uint8Array(len);
      ieee754.write(buf, v, 0, le, mant, len);
      return { bytes: Array.from(buf), back: Object.is(ieee754.read(buf, 0, le, mant, len), -0) ? "-0" : ieee754.read(buf, 0, le, mant, len) };
    });
  }
  return out;
}
