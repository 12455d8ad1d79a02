import { tools } from "toolscript";

// The tool answers isError: only http, https and data URLs are fetched.
console.log("calling");
await tools.everything.gzipFileAsResource({ data: "ftp://example.com/readme" });
console.log("not reached");
