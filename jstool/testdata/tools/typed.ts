// TypeScript with types and a top-level await.
interface Params { words: string[] }
interface Result { count: number; longest: string }

const minimum: number = await Promise.resolve(1);

export async function execute({ words }: Params): Promise<Result> {
  const longest = words.reduce((a, b) => (b.length > a.length ? b : a), "");
  return { count: Math.max(words.length, minimum), longest };
}
