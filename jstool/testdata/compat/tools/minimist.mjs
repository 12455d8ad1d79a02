import minimist from "minimist";

export function execute() {
  return {
    basic: minimist(["-a", "beep", "-b", "boop", "--name=x", "--no-cache", "rest", "-xyz"]),
    typed: minimist(["--port", "8080", "--host", "007", "--", "--tail"], {
      string: ["host"],
      boolean: ["debug"],
      default: { debug: false },
      alias: { p: "port" },
      "--": true,
    }),
  };
}
