import { z } from "zod";

const User = z.object({
  name: z.string().min(2),
  email: z.string().email(),
  age: z.number().int().positive().optional(),
  roles: z.array(z.enum(["admin", "user"])).default(["user"]),
});

export function execute() {
  const ok = User.safeParse({ name: "Ann", email: "ann@example.com", age: 31 });
  const bad = User.safeParse({ name: "A", email: "nope", age: -1, roles: ["root"] });
  return {
    ok: ok.success ? ok.data : null,
    issues: bad.success ? null : bad.error.issues.map((i) => ({ path: i.path, code: i.code, message: i.message })),
    coerced: z.coerce.number().parse("42"),
    union: z.union([z.string(), z.number()]).safeParse(true).success,
    schema: z.toJSONSchema(User),
  };
}
