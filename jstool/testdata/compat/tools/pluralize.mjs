import pluralize from "pluralize";

export function execute() {
  const words = ["person", "child", "mouse", "index", "status", "sheep", "octopus", "box", "cactus", "criterion", "City", "GOOSE"];
  return {
    plural: words.map((w) => pluralize(w)),
    singular: words.map((w) => pluralize.singular(pluralize(w))),
    counted: [pluralize("test", 1, true), pluralize("test", 5, true), pluralize("test", 0)],
    isPlural: [pluralize.isPlural("men"), pluralize.isSingular("men")],
  };
}
