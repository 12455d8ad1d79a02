// A factory (a function without execute): called with no arguments, then,
// when that gives no tool, with the request's env.
export default function makeTool(env) {
  if (env === undefined) return null;
  return {
    execute: ({ q }) => ({ q, region: env.REGION ?? "none" }),
  };
}
