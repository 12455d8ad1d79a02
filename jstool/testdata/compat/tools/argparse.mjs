import { ArgumentParser } from "argparse";

export function execute() {
  const parser = new ArgumentParser({ prog: "resize", description: "Resize images", exit_on_error: false });
  parser.add_argument("files", { nargs: "+" });
  parser.add_argument("-w", "--width", { type: "int", default: 100 });
  parser.add_argument("--mode", { choices: ["fit", "fill"], default: "fit" });
  parser.add_argument("-q", "--quiet", { action: "store_true" });
  const args = parser.parse_args(["a.png", "b.png", "-w", "320", "--mode", "fill"]);
  let error = null;
  try {
    parser.parse_args(["--mode", "crop", "x.png"]);
  } catch (e) {
    error = e.message;
  }
  return { args: { ...args }, help: parser.format_help(), usage: parser.format_usage(), error };
}
