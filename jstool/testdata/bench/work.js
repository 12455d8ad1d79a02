// A tool doing ordinary work, the kind a small tool built on lodash, yaml or
// marked does: it builds records, serializes them to JSON and parses them
// back, tokenizes text with regular expressions, counts words in a Map,
// sorts, and formats strings. Input {"n":N}: N rounds of 200 records.
// bench/fuelrate measures its fuel per second; jstool's tests run it at the
// default limits.
export function execute({ n }) {
  const words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"];
  const counts = new Map();
  let bytes = 0;
  let checksum = 0;
  for (let round = 0; round < n; round++) {
    const records = [];
    for (let i = 0; i < 200; i++) {
      const w = words[(i * 7 + round) % words.length];
      records.push({
        id: `${round}-${i}`,
        name: `${w} ${w.toUpperCase()} item #${i}`,
        tags: [w, words[(i + 3) % words.length]],
        price: Math.round(((i * 37 + round) % 1000) * 1.07) / 100,
        date: new Date(Date.UTC(2024, i % 12, 1 + (i % 28))).toISOString(),
      });
    }
    const text = JSON.stringify(records);
    bytes += text.length;
    const back = JSON.parse(text);
    back.sort((a, b) => a.price - b.price || a.id.localeCompare(b.id));
    for (const r of back) {
      for (const token of r.name.toLowerCase().split(/[^a-z0-9]+/)) {
        if (token) counts.set(token, (counts.get(token) || 0) + 1);
      }
      checksum = (checksum + r.price * 100 + r.tags.join(",").length) | 0;
    }
    const summary = back.slice(0, 5).map((r) => `${r.id}: ${r.name.padEnd(30, ".")} ${r.price.toFixed(2)}`).join("\n");
    checksum = (checksum + summary.replace(/\s+/g, " ").length) | 0;
  }
  const top = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 3);
  return { n, bytes, checksum, top };
}
