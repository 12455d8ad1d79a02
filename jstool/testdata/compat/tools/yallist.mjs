import { Yallist } from "yallist";

export function execute() {
  const list = Yallist.create([1, 2, 3, 4, 5]);
  list.push(6);
  list.unshift(0);
  const popped = [list.pop(), list.shift()];
  return {
    array: list.toArray(),
    reversed: list.toArrayReverse(),
    popped,
    mapped: list.map((x) => x * x).toArray(),
    reduced: list.reduce((a, b) => a + b, 0),
    sliced: list.slice(1, 3).toArray(),
    spliced: list.splice(1, 2, "a", "b").concat(list.toArray()),
    length: list.length,
  };
}
