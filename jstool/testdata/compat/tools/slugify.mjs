import slugify from "slugify";

export function execute() {
  return {
    slugs: ["Hello, World!", "  Grüße aus Köln  ", "I ♥ Unicode & $money", "Ελληνικά κείμενο", "foo_bar.baz"].map((s) => slugify(s)),
    lower: slugify("Some Title: With Stuff", { lower: true, strict: true }),
    replacement: slugify("a b c", "_"),
    locale: slugify("Ärger", { locale: "de" }),
  };
}
