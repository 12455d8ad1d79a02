import { pure } from "./pure.js";
/* @__PURE__ */ pure("an unused call marked pure still runs");
console.log("cli ran with", process.argv.slice(2).join(" "));
