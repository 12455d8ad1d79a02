import { tools } from "toolscript";

await (tools as any).math.product({ numbers: [2, 3] });
