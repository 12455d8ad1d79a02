// The result resolves, but a rejection nobody handles fails the script.
async function forgotten(): Promise<void> {
  throw new RangeError("nobody awaited this");
}

export default async function main() {
  void forgotten();
  return "done";
}
