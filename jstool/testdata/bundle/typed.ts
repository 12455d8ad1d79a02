interface Input {
  name: string;
  count?: number;
}

enum Mode {
  Loud = "LOUD",
  Quiet = "quiet",
}

const config = await Promise.resolve({ mode: Mode.Loud as Mode });

export default function greet(input: Input): string {
  const who: string = input.name;
  return config.mode === Mode.Loud ? `HELLO ${who}` : `hello ${who}`;
}
