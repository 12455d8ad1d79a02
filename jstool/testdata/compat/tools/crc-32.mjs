import CRC32 from "crc-32";

export function execute() {
  return {
    str: CRC32.str("The quick brown fox jumps over the lazy dog"),
    unicode: CRC32.str("中文 ✓"),
    buf: CRC32.buf([1, 2, 3, 4, 5]),
    seeded: CRC32.str("world", CRC32.str("hello ")),
    unsigned: CRC32.str("SheetJS") >>> 0,
  };
}
