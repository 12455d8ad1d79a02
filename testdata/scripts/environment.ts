// What a script can learn about its environment: no variables, no network.
let network: string;
try {
  await fetch("https://example.com/");
  network = "fetched";
} catch (e: any) {
  network = e.message;
}
export default { env: Object.keys(process.env), network };
