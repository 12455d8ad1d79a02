import { shout } from "./lib/shout.js";
import { whisper } from "./lib/whisper.ts";

export default function run(input) {
  return shout(input.text) + " " + whisper(input.text);
}
