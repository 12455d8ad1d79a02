// slugify: a TypeScript tool for `make demo`. It turns a title into a URL
// slug and reports what it removed.

interface Params {
  title: string;
  maxLength?: number;
}

interface Result {
  slug: string;
  removed: string[];
}

export function execute({ title, maxLength = 60 }: Params): Result {
  if (typeof title !== "string") throw new TypeError("title must be a string");
  const removed = new Set<string>();
  const words = title
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => {
      if (STOP_WORDS.has(w)) removed.add(w);
      return w !== "" && !STOP_WORDS.has(w);
    });
  let slug = "";
  for (const w of words) {
    const next = slug === "" ? w : slug + "-" + w;
    if (next.length > maxLength) break;
    slug = next;
  }
  console.log(`slugified ${title.length} characters into ${slug.length}`);
  return { slug, removed: [...removed].sort() };
}

const STOP_WORDS = new Set(["a", "an", "and", "the", "of", "in", "on", "for", "to"]);
