// The toolscript text's execution context: the gateway URL, the working
// directory, and nothing else put into the environment.
const deno = Deno.env.toObject();
export default {
  gateway: Deno.env.get("TOOLSCRIPT_GATEWAY_URL"),
  deno,
  // @ts-expect-error: process is Node's, not declared for scripts; a script that names it gets it bundled in
  node: { ...process.env },
  cwd: Deno.cwd(),
  denoKeys: Object.getOwnPropertyNames(Deno).sort(),
  home: Deno.env.has("HOME") || "HOME" in deno,
};
