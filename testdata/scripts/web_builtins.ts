// The pure web built-ins the engine gives, declared for the checker.
const u = new URL("https://example.com/a?b=1");
const t = new TextEncoder().encode("hé");
await new Promise<void>((resolve) => setTimeout(resolve, 1000));
export default { host: u.host, b: u.searchParams.get("b"), n: t.length, a: btoa("x"), c: structuredClone({ d: 1 }), s: new TextDecoder().decode(t) };
