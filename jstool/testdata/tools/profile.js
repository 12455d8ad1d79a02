// The determinism profile as a tool sees it.
export function execute() {
  console.log("profile", { checked: true });
  console.error("to the log too");
  return {
    now: new Date().toISOString(),
    dateNow: Date.now(),
    random: [Math.random(), Math.random()],
    types: {
      process: typeof process, fetch: typeof fetch,
      setTimeout: typeof setTimeout, setInterval: typeof setInterval,
    },
    require: (() => {
      try {
        require(["f", "s"].join(""));
        return "require worked";
      } catch (e) {
        return e.message;
      }
    })(),
    timezoneOffset: new Date().getTimezoneOffset(),
  };
}
