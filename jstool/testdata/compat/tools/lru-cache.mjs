import { LRUCache } from "lru-cache";

// No ttl: time-based expiry would read the clock.
export function execute() {
  const evicted = [];
  const cache = new LRUCache({ max: 3, dispose: (v, k, reason) => evicted.push([k, v, reason]) });
  cache.set("a", 1).set("b", 2).set("c", 3);
  cache.get("a");
  cache.set("d", 4);
  cache.set("a", 10);
  const sized = new LRUCache({ maxSize: 10, sizeCalculation: (v) => v.length });
  sized.set("x", "12345").set("y", "123456").set("z", "12");
  return {
    keys: [...cache.keys()],
    entries: [...cache.entries()],
    evicted,
    has: [cache.has("b"), cache.has("c")],
    peek: cache.peek("c"),
    sizedKeys: [...sized.keys()],
    calculatedSize: sized.calculatedSize,
    dump: cache.dump().map(([k, e]) => [k, e.value]),
  };
}
