import BigNumber from "bignumber.js";

export function execute() {
  const B = BigNumber.clone({ DECIMAL_PLACES: 30 });
  return {
    sum: new BigNumber(0.1).plus(0.2).toString(),
    div: new B(1).div(3).toString(),
    pow: new BigNumber(2).pow(200).toFixed(),
    sqrt: new B(2).sqrt().toString(),
    formatted: new BigNumber("1234567.891").toFormat(2),
    bases: [new BigNumber(255).toString(16), new BigNumber("ff", 16).toString(2)],
    cmp: [new BigNumber("1e-7").isLessThan("1e-6"), new BigNumber(NaN).isNaN()],
    rounding: new BigNumber("2.345").decimalPlaces(2, BigNumber.ROUND_HALF_EVEN).toString(),
    exp: new BigNumber("123456789e30").toExponential(4),
  };
}
