export function whisper(text: string): string {
  return text.toLowerCase() + "...";
}
