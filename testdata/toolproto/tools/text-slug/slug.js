// text-slug: a JS tool of the NDJSON tool protocol. It logs to the console
// (info and warn) and throws on bad input.
export function execute({ title }) {
  if (typeof title !== "string") throw new TypeError("title must be a string");
  const slug = title.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean).join("-");
  console.log(`slugging ${title.length} characters`);
  if (slug === "") console.warn("nothing left to slug");
  return { slug };
}
