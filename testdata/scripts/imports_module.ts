// import/export between the script's own modules.
import { double } from "./lib/double.ts";

export default { doubled: double(21) };
