// pat-check: a factory configured by context.config. An expired token is
// the tool's own error, with the code and recoverable flag the tool protocol
// carries in its error event; a token it cannot read is a bug it reports as
// not recoverable.
export default function patCheck(config) {
  if (config === undefined) return null;
  return {
    execute({ prId }) {
      const token = config["azdo.token"];
      console.info("reviewing PR #" + prId);
      if (typeof token !== "string") {
        const e = new TypeError("azdo.token is not a string");
        e.code = "BAD_TOKEN";
        e.recoverable = false;
        throw e;
      }
      if (token.startsWith("expired")) {
        const e = new Error("PAT expired");
        e.code = "AUTH_FAILED";
        throw e;
      }
      return { review: "LGTM" };
    },
  };
}
