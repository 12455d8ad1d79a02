import * as URI from "uri-js";

export function execute() {
  const parsed = URI.parse("uri://user:pass@example.com:123/one/two.three?q1=a1&q2=a2#body");
  return {
    parsed,
    serialized: URI.serialize({ scheme: "http", host: "example.com", fragment: "footer" }),
    resolved: URI.resolve("uri://a/b/c/d?q", "../../g"),
    normalized: URI.normalize("HTTP://ABC.com:80/%7Esmith/home.html"),
    equal: URI.equal("example://a/b/c/%7Bfoo%7D", "eXAMPLE://a/./b/../b/%63/%7bfoo%7d"),
    iri: URI.serialize(URI.parse("http://examplé.org/rosé"), { iri: false }),
    mailto: URI.parse("mailto:alpha@example.com?subject=hi"),
  };
}
