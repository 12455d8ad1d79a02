// process.env is the call's env, frozen.
export function execute() {
  let assigned;
  try {
    process.env.NEW = "x";
    assigned = "assigned";
  } catch (e) {
    assigned = e.name;
  }
  return { key: process.env.API_KEY ?? null, frozen: Object.isFrozen(process.env), keys: Object.keys(process.env), assigned,
    platform: process.platform, cwd: process.cwd(), argv: process.argv.length, version: typeof process.version };
}
