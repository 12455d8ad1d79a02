import _ from "lodash";

export function execute() {
  const users = [
    { user: "barney", age: 36, active: true, tags: ["a", "b"] },
    { user: "fred", age: 40, active: false, tags: ["b"] },
    { user: "pebbles", age: 1, active: true, tags: [] },
  ];
  return {
    sorted: _.sortBy(users, ["age"]).map((u) => u.user),
    grouped: _.groupBy(users, "active"),
    chunk: _.chunk([1, 2, 3, 4, 5], 2),
    merged: _.merge({ a: { b: 1, c: [1] } }, { a: { d: 2, c: [undefined, 2] } }),
    cases: [_.camelCase("Foo Bar-baz"), _.kebabCase("fooBarBaz"), _.snakeCase("Foo Bar"), _.startCase("--foo-bar--")],
    template: _.template("hello <%= user %>, <%- html %>!")({ user: "fred", html: "<b>&</b>" }),
    get: _.get({ a: [{ b: { c: 3 } }] }, "a[0].b.c"),
    uniq: _.uniqBy([2.1, 1.2, 2.3], Math.floor),
    debounced: typeof _.debounce(() => {}, 10),
    deep: _.isEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }),
    range: _.range(0, 20, 5),
    zip: _.zipObject(["a", "b"], [1, 2]),
  };
}
