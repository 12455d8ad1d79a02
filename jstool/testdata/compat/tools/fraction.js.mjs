import Fraction from "fraction.js";

export function execute() {
  const f = new Fraction("1/3").add("2/7").mul(14);
  return {
    f: f.toFraction(true),
    decimal: new Fraction(1, 7).toString(20),
    repeating: new Fraction("0.(142857)").toFraction(),
    fromDecimal: new Fraction(0.125).toFraction(),
    latex: new Fraction("-17/5").toLatex(true),
    continued: new Fraction(415, 93).toContinued().map(String),
    simplify: new Fraction(Math.PI).simplify(0.001).toFraction(),
    cmp: [new Fraction("2/3").compare("3/4"), new Fraction("4/6").equals("2/3")],
    ops: [new Fraction(5, 3).floor(1).toString(), new Fraction("7/4").mod("1/2").toString(), new Fraction(2, 9).pow(-2).toString()],
  };
}
