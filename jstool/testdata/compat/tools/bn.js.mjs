import BN from "bn.js";

export function execute() {
  const a = new BN("dead", 16);
  const b = new BN("101010", 2);
  const big = new BN("123456789012345678901234567890");
  const p = new BN("fffffffffffffffffffffffffffffffeffffffffffffffff", 16);
  return {
    add: a.add(b).toString(10),
    mul: big.mul(big).toString(),
    divmod: [big.div(new BN(97)).toString(), big.mod(new BN(97)).toString()],
    pow: new BN(3).pow(new BN(100)).toString(36),
    red: new BN(5).toRed(BN.red(p)).redPow(new BN(1000)).fromRed().toString(16),
    inv: new BN(17).invm(new BN(3120)).toString(),
    bytes: big.toArray("be", 16),
    twos: new BN(-5).toTwos(16).toString(16),
    bits: [big.bitLength(), big.zeroBits(), big.isEven()],
  };
}
