export async function execute() {
  await null;
  throw new TypeError("async failure");
}
