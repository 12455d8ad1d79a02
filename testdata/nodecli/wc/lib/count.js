exports.count = (text) => ({
  lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0),
  words: text.split(/\s+/).filter(Boolean).length,
  chars: [...text].length,
});
