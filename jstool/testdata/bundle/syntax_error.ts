type Input = { a: number };

export default function run(input: Input): number {
  let total: number = input.a
  total x= 2;
  return total;
}
