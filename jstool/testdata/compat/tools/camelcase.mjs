import camelCase from "camelcase";

export function execute() {
  const inputs = ["foo-bar", "foo_bar", "Foo-Bar", "--foo.bar", "__foo__bar__", "fooBAR", "XMLHttpRequest", "foo bar 2 baz", "lorem-ipsum-dolor"];
  return {
    camel: inputs.map((s) => camelCase(s)),
    pascal: inputs.map((s) => camelCase(s, { pascalCase: true })),
    preserve: camelCase("fooBAR-baz", { preserveConsecutiveUppercase: true }),
    array: camelCase(["foo", "bar", "baz-qux"]),
    locale: camelCase("lorem-ipsum", { locale: "en-US" }),
  };
}
