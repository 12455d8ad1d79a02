import jsbn from "jsbn";

const { BigInteger } = jsbn;

export function execute() {
  const a = new BigInteger("123456789abcdef0123456789", 16);
  const m = new BigInteger("1000000007");
  return {
    square: a.square().toString(),
    modPow: a.modPow(new BigInteger("65537"), m).toString(),
    modInverse: new BigInteger("42").modInverse(m).toString(),
    gcd: a.gcd(new BigInteger("1234567890")).toString(),
    shifted: a.shiftLeft(70).toString(36),
    bytes: new BigInteger("-129").toByteArray(),
    probablePrime: [m.isProbablePrime(20), a.isProbablePrime(20)],
    bits: a.bitLength(),
  };
}
