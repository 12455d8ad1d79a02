import { parse, serialize } from "cookie";

// The expiry is a fixed date, never now plus an age.
export function execute() {
  return {
    parsed: parse("foo=bar; equation=E%3Dmc%5E2; empty=; quoted=\"q v\"; dup=1; dup=2"),
    serialized: [
      serialize("session", "a b;c", { httpOnly: true, secure: true, sameSite: "strict", path: "/", maxAge: 3600 }),
      serialize("pref", "dark", { expires: new Date(Date.UTC(2030, 0, 1)), domain: "example.com", partitioned: true, priority: "high" }),
    ],
  };
}
