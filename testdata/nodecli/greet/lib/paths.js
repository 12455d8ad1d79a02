// A required module: its own __filename, and require.main is not it.
const path = require("path");
exports.where = () => path.relative(process.cwd(), __filename);
exports.isMain = require.main === module;
exports.mainFile = require.main.filename;
