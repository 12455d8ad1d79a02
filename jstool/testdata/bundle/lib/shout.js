export function shout(text) {
  return text.toUpperCase() + "!";
}
