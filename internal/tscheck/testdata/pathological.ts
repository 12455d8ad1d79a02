// A type that doubles a string for every element of a 40-element tuple: the
// compiler builds strings of 2^41 characters, its time and memory doubling
// with each step (2.6 s and 740 MB at step 26 on TypeScript 7.0.2).
type Tuple<N extends number, A extends unknown[] = []> = A["length"] extends N ? A : Tuple<N, [...A, unknown]>;
type Double<S extends string, N extends unknown[]> = N extends [unknown, ...infer R] ? Double<`${S}${S}`, R> : S;
export const big: Double<"ab", Tuple<40>> = "ab";
