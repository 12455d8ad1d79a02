import wrapAnsi from "wrap-ansi";

export function execute() {
  const text = "The quick brown \u001B[31mfox jumped over\u001B[39m the lazy \u001B[32mdog and then ran away with the unicorn.\u001B[39m";
  return {
    wrapped: wrapAnsi(text, 20),
    hard: wrapAnsi("antidisestablishmentarianism is long", 10, { hard: true }),
    noTrim: wrapAnsi("  indented words here  ", 8, { trim: false }),
    cjk: wrapAnsi("古池や蛙飛び込む水の音", 6),
  };
}
