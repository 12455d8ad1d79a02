import { tools } from "toolscript";

interface Row {
  name: string;
  value: number;
}

const rows: Row[] = [
  { name: "a", value: 1 },
  { name: "b", value: 2 },
];
const { sum } = await tools.math.sum({ numbers: rows.map((row) => row.value) });
export const doubled: number = sum * 2;
export const last = rows.findLast((row) => row.value > 1)?.name;
