// An async execute, awaiting its own promises.
export async function execute({ n }) {
  const doubled = await Promise.resolve(n * 2);
  return { doubled, squares: await Promise.all([1, 2, 3].map(async (i) => i * i)) };
}
