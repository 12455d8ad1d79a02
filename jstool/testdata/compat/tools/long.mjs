import Long from "long";

export function execute() {
  const a = Long.fromString("9223372036854775807");
  const b = Long.fromNumber(-123456789);
  const u = Long.fromString("18446744073709551615", true);
  return {
    add: a.add(1).toString(),
    mul: b.multiply(b).toString(16),
    div: a.divide(Long.fromInt(7)).toString(),
    mod: a.modulo(1000).toNumber(),
    unsigned: [u.toString(), u.shiftRightUnsigned(60).toString(), u.toSigned().toString()],
    bits: [b.getHighBits(), b.getLowBits(), b.toBytesBE()],
    cmp: [a.compare(b), Long.MIN_VALUE.negate().equals(Long.MIN_VALUE)],
    radix: Long.fromString("zz", false, 36).toString(2),
  };
}
