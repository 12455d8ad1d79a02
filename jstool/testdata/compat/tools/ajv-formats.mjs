import Ajv from "ajv";
import addFormats from "ajv-formats";

export function execute() {
  const ajv = new Ajv({ allErrors: true });
  addFormats(ajv);
  const validate = ajv.compile({
    type: "object",
    properties: {
      email: { type: "string", format: "email" },
      site: { type: "string", format: "uri" },
      day: { type: "string", format: "date" },
      at: { type: "string", format: "date-time" },
      ip: { type: "string", format: "ipv4" },
      id: { type: "string", format: "uuid" },
      size: { type: "integer", format: "int32" },
    },
  });
  const good = { email: "a@b.co", site: "https://x.org/p?q=1", day: "2024-02-29", at: "2024-02-29T10:00:00Z", ip: "10.0.0.1", id: "6ba7b810-9dad-11d1-80b4-00c04fd430c8", size: 5 };
  const bad = { email: "a@", site: "not a uri", day: "2023-02-29", at: "2024-02-29 10:00", ip: "300.1.1.1", id: "xyz", size: 2 ** 40 };
  return { good: validate(good), bad: validate(bad), errors: validate.errors.map((e) => [e.instancePath, e.message]) };
}
