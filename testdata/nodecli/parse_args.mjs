// util.parseArgs as node 20 has it: options, positionals, tokens, defaults
// and its errors.
import { parseArgs } from "node:util";

const options = {
  indent: { type: "string", short: "i", default: "2" },
  json: { type: "boolean" },
  tag: { type: "string", multiple: true },
};
const show = (config) => {
  try {
    const { values, positionals, tokens } = parseArgs(config);
    console.log(JSON.stringify({ values, positionals, tokens }), Object.getPrototypeOf(values));
  } catch (e) {
    console.log(e.name, e.code, e.message, e instanceof TypeError);
  }
};
show({ options, allowPositionals: true });
show({ args: ["-i4", "--json", "--tag", "a", "--tag=b", "x", "--", "-y"], options, allowPositionals: true, tokens: true });
show({ args: ["-ji", "8"], options });
show({ args: ["--nope"], options });
show({ args: ["--nope"], options, allowPositionals: true });
show({ args: ["pos"], options });
show({ args: ["--indent"], options });
show({ args: ["--json=yes"], options });
show({ args: ["--loose", "-x", "v"], strict: false });
show({ args: "x" });
show({ args: [], options: { n: { type: "number" } } });
show({ args: [], options: { n: { type: "string", short: "nn" } } });
show({ args: [], options: { n: { type: "string", default: 1 } } });
show({ args: [], strict: "yes" });
show({ args: [], allowNegative: false });
