export default function run(input) {
  const a = input.a;
  return a +* 2;
}
