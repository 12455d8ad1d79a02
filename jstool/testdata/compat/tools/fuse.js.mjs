import Fuse from "fuse.js";

const books = [
  { title: "Old Man's War", author: { firstName: "John", lastName: "Scalzi" } },
  { title: "The Lock Artist", author: { firstName: "Steve", lastName: "Hamilton" } },
  { title: "HTML5", author: { firstName: "Remy", lastName: "Sharp" } },
  { title: "Right Ho Jeeves", author: { firstName: "P.D", lastName: "Woodhouse" } },
  { title: "The Code of the Wooster", author: { firstName: "P.D", lastName: "Woodhouse" } },
];

export function execute() {
  const fuse = new Fuse(books, { keys: ["title", "author.lastName"], includeScore: true, includeMatches: true, threshold: 0.4 });
  return {
    woodhouse: fuse.search("wodehouse"),
    lock: fuse.search("lock art").map((r) => [r.item.title, r.score]),
    extended: new Fuse(books, { keys: ["title"], useExtendedSearch: true }).search("^The").map((r) => r.refIndex),
  };
}
