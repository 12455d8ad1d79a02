import { tools } from "toolscript";

// Three calls under --mcp-max-calls 2: the third is refused.
const said: string[] = [];
for (const word of ["one", "two", "three"]) {
  try {
    await tools.everything.echo({ message: word });
    said.push(word);
  } catch (e: any) {
    said.push(e.status + " " + e.reasonCodes.join(","));
  }
}
export default said;
