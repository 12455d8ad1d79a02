import he from "he";

export function execute() {
  return {
    encoded: he.encode("foo © bar ≠ baz 𝌆 qux <&>"),
    named: he.encode("foo © bar ≠ baz 𝌆 qux", { useNamedReferences: true }),
    decoded: he.decode("foo &copy; bar &ne; baz &#x1D306; qux &amp;lt; &notin; &NotEqualTilde;"),
    escaped: he.escape("<img src='x' alt=\"y\">"),
    unescaped: he.unescape("&lt;b&gt; &amp; &quot;"),
  };
}
