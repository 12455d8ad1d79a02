import { minimatch, escape, braceExpand, Minimatch } from "minimatch";

export function execute() {
  const files = ["src/a.js", "src/lib/b.ts", "test/a.test.js", ".hidden/x.js", "README.md", "src/c.JS"];
  return {
    js: files.filter((f) => minimatch(f, "**/*.js")),
    dot: files.filter((f) => minimatch(f, "**/*.js", { dot: true })),
    nocase: files.filter((f) => minimatch(f, "src/*.js", { nocase: true })),
    brace: files.filter((f) => minimatch(f, "{src,test}/**/*.{js,ts}")),
    negated: files.filter((f) => minimatch(f, "!**/*.md")),
    ext: minimatch("a/b/c.tar.gz", "**/*.+(gz|zip)"),
    braces: braceExpand("a{b,c}{1..3}"),
    parts: new Minimatch("src/**/*.{js,ts}").set.length,
    escaped: escape("a*b?[c]"),
  };
}
