import stringWidth from "string-width";

export function execute() {
  const samples = ["abcde", "古池や", "\u001B[1m古\u001B[22m", "👩‍👩‍👧‍👦", "é", "e\u0301", "ｈｅｌｌｏ", "\t", "🇫🇷", "a\u200Bb"];
  return {
    widths: samples.map((s) => stringWidth(s)),
    ambiguous: stringWidth("±×÷", { ambiguousIsNarrow: false }),
    countAnsi: stringWidth("\u001B[1mab\u001B[22m", { countAnsiEscapeCodes: true }),
  };
}
