import * as v from "valibot";

const Login = v.object({
  email: v.pipe(v.string(), v.email()),
  password: v.pipe(v.string(), v.minLength(8)),
  remember: v.optional(v.boolean(), false),
  age: v.pipe(v.unknown(), v.transform(Number), v.number(), v.integer()),
});

export function execute() {
  const ok = v.safeParse(Login, { email: "jane@example.com", password: "12345678", age: "40" });
  const bad = v.safeParse(Login, { email: "jane", password: "123", age: "x" });
  return {
    ok: ok.output,
    success: [ok.success, bad.success],
    issues: bad.issues.map((i) => ({ kind: i.kind, type: i.type, message: i.message, path: i.path?.map((p) => p.key) })),
    flat: v.flatten(bad.issues),
  };
}
