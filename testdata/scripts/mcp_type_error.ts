import { tools } from "toolscript";

// get-sum takes numbers: a string is a type error, and nothing runs.
export default await tools.everything.getSum({ a: "2", b: 3 });
