import Decimal from "decimal.js";

export function execute() {
  const D = Decimal.clone({ precision: 40 });
  return {
    sum: new Decimal(0.1).plus(0.2).toString(),
    div: new D(1).div(7).toString(),
    sqrt2: new D(2).sqrt().toFixed(35),
    pow: new Decimal("1.0001").pow(10000).toSignificantDigits(20).toString(),
    exp: new D(1).exp().toString(),
    ln: new D(10).ln().toString(),
    round: [new Decimal("2.5").toDecimalPlaces(0).toString(), new Decimal("-2.5").toDecimalPlaces(0, Decimal.ROUND_HALF_EVEN).toString()],
    hex: new Decimal(255.5).toHexadecimal(),
    fraction: new Decimal("0.3125").toFraction(),
    big: new Decimal("123456789012345678901234567890").times("987654321098765432109876543210").toString(),
  };
}
