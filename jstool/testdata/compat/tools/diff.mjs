import { diffChars, diffWords, diffLines, createTwoFilesPatch, applyPatch, diffJson } from "diff";

const a = "line one\nline two\nline three\n";
const b = "line one\nline 2\nline three\nline four\n";

export function execute() {
  const patch = createTwoFilesPatch("a.txt", "b.txt", a, b, "old", "new");
  return {
    chars: diffChars("kitten", "sitting"),
    words: diffWords("the quick brown fox", "the slow brown dog"),
    lines: diffLines(a, b).map((p) => [p.added ? "+" : p.removed ? "-" : " ", p.value]),
    patch,
    applied: applyPatch(a, patch) === b,
    json: diffJson({ a: 1, b: [1, 2] }, { a: 2, b: [1, 2] }).map((p) => [p.added ? "+" : p.removed ? "-" : " ", p.value]),
  };
}
