import { produce, enablePatches, produceWithPatches, applyPatches, freeze } from "immer";

enablePatches();

export function execute() {
  const base = { todos: [{ id: 1, done: false, text: "a" }, { id: 2, done: false, text: "b" }], meta: { count: 2 } };
  const next = produce(base, (draft) => {
    draft.todos[0].done = true;
    draft.todos.push({ id: 3, done: false, text: "c" });
    draft.meta.count++;
  });
  const [, patches, inverse] = produceWithPatches(base, (d) => {
    d.todos.splice(0, 1);
    d.meta.extra = new Map([["k", 1]]).size;
  });
  return {
    next,
    sharing: [next.todos[1] === base.todos[1], next === base, Object.isFrozen(next)],
    patches,
    inverse,
    undone: applyPatches(applyPatches(base, patches), inverse),
    frozen: Object.isFrozen(freeze({ a: 1 }, true)),
  };
}
