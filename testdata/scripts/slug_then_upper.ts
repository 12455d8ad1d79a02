// A JS tool (text.slug, TypeScript) and a Wasm tool (text.upper).
import { tools } from "toolscript";

const { slug } = await tools.text.slug({ title: "Hello, World" });
const { text } = await tools.text.upper({ text: slug });
export default { slug, text };
