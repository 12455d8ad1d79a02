import emojiRegex from "emoji-regex";

export function execute() {
  const text = "\u{231A}: ⌚ default emoji, \u{2194}\u{FE0F}: ↔️ with VS16, 👩‍💻 ZWJ, 🇳🇱 flag, 👍🏽 skin, plain text 1#";
  const found = [];
  for (const m of text.matchAll(emojiRegex())) found.push({ emoji: m[0], index: m.index, codePoints: [...m[0]].map((c) => c.codePointAt(0)) });
  return { found, stripped: text.replace(emojiRegex(), "").trim() };
}
