export function execute(p: { a: number }): number {
  return p.a as;
}
