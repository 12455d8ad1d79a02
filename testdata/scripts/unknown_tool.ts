// tools holds the registered actions only.
import { tools } from "toolscript";

const t: any = tools;
let error: any;
try {
  await t.math.product({ numbers: [2, 3] });
} catch (e) {
  error = e;
}

export default {
  namespaces: Object.keys(tools),
  math: Object.keys(tools.math),
  text: Object.keys(tools.text),
  hasProduct: "product" in tools.math,
  typeError: error instanceof TypeError,
};
