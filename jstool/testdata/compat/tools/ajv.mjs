import Ajv from "ajv";

const schema = {
  type: "object",
  properties: {
    id: { type: "integer", minimum: 1 },
    name: { type: "string", minLength: 1, pattern: "^[A-Z]" },
    tags: { type: "array", items: { type: "string" }, uniqueItems: true },
    size: { enum: ["s", "m", "l"], default: "m" },
  },
  required: ["id", "name"],
  additionalProperties: false,
};

export function execute() {
  const ajv = new Ajv({ allErrors: true, useDefaults: true });
  const validate = ajv.compile(schema);
  const good = { id: 3, name: "Box", tags: ["a", "b"] };
  const goodResult = validate(good);
  const bad = { id: 0, name: "box", tags: ["a", "a"], extra: 1 };
  validate(bad);
  return { goodResult, good, errors: validate.errors, text: ajv.errorsText(validate.errors) };
}
