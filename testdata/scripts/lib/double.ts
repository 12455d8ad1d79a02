// A module a script imports.
export function double(n: number): number {
  return n * 2;
}
