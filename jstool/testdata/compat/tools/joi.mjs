import Joi from "joi";

const schema = Joi.object({
  username: Joi.string().alphanum().min(3).max(30).required(),
  password: Joi.string().pattern(/^[a-zA-Z0-9]{3,30}$/),
  birth_year: Joi.number().integer().min(1900).max(2013),
  email: Joi.string().email({ minDomainSegments: 2, tlds: false }),
  tags: Joi.array().items(Joi.string()).unique().default([]),
}).with("username", "birth_year");

export function execute() {
  const ok = schema.validate({ username: "abc", birth_year: 1994, email: "x@y.com" });
  const bad = schema.validate({ username: "a!", password: "?", birth_year: 1800, tags: ["a", "a"] }, { abortEarly: false });
  return {
    ok: ok.value,
    okError: ok.error ?? null,
    details: bad.error.details.map((d) => ({ message: d.message, path: d.path, type: d.type })),
    described: schema.describe().keys.username,
    converted: Joi.number().validate("12.5").value,
  };
}
