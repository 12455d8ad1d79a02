import fs from "fs";

export default (): string => fs.readFileSync("/etc/passwd", "utf8");
