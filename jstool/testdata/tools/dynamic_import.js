export async function execute() {
  const name = "fs";
  return await import(name);
}
