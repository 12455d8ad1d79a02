import stripAnsi from "strip-ansi";

export function execute() {
  return {
    plain: stripAnsi("\u001B[4mUnicorn\u001B[0m"),
    link: stripAnsi("\u001B]8;;https://github.com\u0007Click\u001B]8;;\u0007"),
    mixed: stripAnsi("\u001B[1m\u001B[31merror\u001B[39m\u001B[22m: file \u001B[36mx.js\u001B[39m"),
  };
}
