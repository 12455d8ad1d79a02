import parser from "yargs-parser";

export function execute() {
  const argv = ["--name", "box", "-vvv", "--no-color", "--size=3", "-x", "1", "-x", "2", "file.txt", "--", "--raw"];
  const parsed = parser(argv, {
    alias: { verbose: ["v"] },
    count: ["verbose"],
    array: ["x"],
    number: ["size"],
    configuration: { "populate--": true },
  });
  const detailed = parser.detailed(["--port", "abc"], { number: ["port"] });
  return { parsed, detailedArgv: detailed.argv, error: detailed.error ? String(detailed.error) : null };
}
