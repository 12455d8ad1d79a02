// Tools that say what they are in every way the prelude reads, and in ways
// it cannot: each export is one case of jstool's TestToolInfo.

const execute = (params) => params;
const object = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };

// A plain JSON Schema object, taken as it is.
export const plain = { title: "Echo", description: "Gives back what it is given", inputSchema: object, outputSchema: object, execute };

// The ai package's jsonSchema() shape, its schema a promise.
export const promised = {
  description: "A schema that comes later",
  inputSchema: {
    [Symbol.for("vercel.ai.schema")]: true,
    get jsonSchema() { return Promise.resolve(object); },
    validate: undefined,
  },
  execute,
};

// The same, a promise that never settles.
export const neverSettles = {
  inputSchema: { [Symbol.for("vercel.ai.schema")]: true, jsonSchema: new Promise(() => {}) },
  execute,
};

// A schema that cannot be read.
export const getterThrows = {
  description: "Its schema cannot be read",
  get inputSchema() { throw new Error("no schema today"); },
  execute,
};

// A Standard JSON Schema whose conversion throws.
export const conversionThrows = {
  inputSchema: {
    "~standard": {
      version: 1, vendor: "acme", validate: (value) => ({ value }),
      jsonSchema: { input() { throw new Error("draft-2020-12 is not supported"); } },
    },
  },
  execute,
};

// An object no library made that holds a function: not a JSON Schema.
export const notASchema = { inputSchema: { type: "object", check() { return true; } }, execute };

// A schema of more than 256 KiB of JSON.
export const tooLarge = {
  inputSchema: { type: "string", enum: Array.from({ length: 30000 }, (_, i) => "value-" + i) },
  execute,
};

// A factory: its tool exists only in an execution.
export function factory() {
  return { description: "Made per call", inputSchema: object, execute };
}
