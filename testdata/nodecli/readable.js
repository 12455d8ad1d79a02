// The 'readable' event with read(), and setEncoding.
process.stdin.setEncoding("utf8");
let text = "";
process.stdin.on("readable", () => {
  let chunk;
  while ((chunk = process.stdin.read()) !== null) text += chunk;
});
process.stdin.on("end", () => {
  const words = text.split(/\s+/).filter(Boolean);
  const freq = {};
  for (const w of words) freq[w.toLowerCase()] = (freq[w.toLowerCase()] || 0) + 1;
  console.log(JSON.stringify({ words: words.length, freq }));
});
