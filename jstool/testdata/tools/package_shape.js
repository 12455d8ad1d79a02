// The shape of an npm package of several tools: named exports, and more
// under the default export.
export const upper = { execute: ({ s }) => ({ s: s.toUpperCase() }) };
export default {
  lower: { execute: ({ s }) => ({ s: s.toLowerCase() }) },
  execute: ({ s }) => ({ s, via: "default" }),
};
export const notATool = 42;
