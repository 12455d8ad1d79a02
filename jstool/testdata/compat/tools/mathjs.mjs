import { create, all } from "mathjs";

const math = create(all);

export function execute() {
  return {
    evaluate: math.evaluate(["sqrt(3^2 + 4^2)", "12.7 cm to inch", "sin(45 deg) ^ 2", "det([1, 2; 3, 4])", "2 + 3i * (1 - i)"]).map((x) => math.format(x, { precision: 14 })),
    derivative: math.derivative("x^3 + 2x^2 - sin(x)", "x").toString(),
    simplify: math.simplify("2x + 3x - x * 1 + 0").toString(),
    matrix: math.multiply(math.matrix([[1, 2], [3, 4]]), math.matrix([[5], [6]])).toJSON(),
    inverse: math.format(math.inv([[2, 0], [1, 1]])),
    fraction: math.format(math.add(math.fraction(1, 3), math.fraction(1, 6))),
    bignumber: math.format(math.bignumber("0.1").plus(math.bignumber("0.2"))),
    stats: [math.mean([1, 2, 3, 4]), math.median([5, 1, 3]), math.std([2, 4, 4, 4, 5, 5, 7, 9])],
    tex: math.parse("sqrt(x/2)").toTex(),
  };
}
