import levenshtein from "fast-levenshtein";

export function execute() {
  const pairs = [["kitten", "sitting"], ["flaw", "lawn"], ["", "abc"], ["mañana", "manana"], ["résumé", "resume"], ["gumbo", "gambol"]];
  return {
    distances: pairs.map(([a, b]) => levenshtein.get(a, b)),
    // The collator option uses Intl.Collator: accents compare equal at base strength.
    collated: levenshtein.get("mańana", "mañana", { useCollator: true }),
  };
}
