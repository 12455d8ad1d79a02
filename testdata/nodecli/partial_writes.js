// One JSON document written in pieces: strings, a Buffer, a Uint8Array,
// non-ASCII text, and a write callback that writes the rest.
process.stdout.write('{"greeting":');
process.stdout.write(Buffer.from('"héllo wörld ✓"'));
process.stdout.write(new Uint8Array([44, 34, 110, 34, 58])); // ,"n":
process.stdout.write("4", () => {
  process.stdout.write("2}\n", "utf8", () => process.stderr.write("flushed\n"));
});
