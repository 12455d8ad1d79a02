import * as R from "ramda";

export function execute() {
  const people = [{ name: "ann", age: 31, dept: "eng" }, { name: "bob", age: 25, dept: "ops" }, { name: "cy", age: 40, dept: "eng" }];
  const namesOver30 = R.pipe(R.filter(R.propSatisfies(R.lt(30), "age")), R.map(R.prop("name")), R.join(","));
  return {
    namesOver30: namesOver30(people),
    byDept: R.map(R.pluck("name"), R.groupBy(R.prop("dept"), people)),
    sorted: R.sortWith([R.descend(R.prop("age"))], people).map((p) => p.name),
    lens: R.over(R.lensPath(["a", "b"]), R.inc, { a: { b: 1 } }),
    curried: R.add(2)(3),
    range: R.xprod([1, 2], ["a", "b"]),
    mergeDeep: R.mergeDeepRight({ a: { b: 1, c: 2 } }, { a: { c: 3 } }),
    uniq: R.uniqWith(R.eqBy(Math.abs), [1, -1, 2, -3, 3]),
    toString: R.toString({ a: [1, "x", null], d: new Date(Date.UTC(2020, 0, 1)) }),
  };
}
