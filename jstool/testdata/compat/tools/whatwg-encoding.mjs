import whatwgEncoding from "whatwg-encoding";

export function execute() {
  return {
    labels: ["latin1", "utf8", "UTF-16", "sjis", "gbk", "unknown"].map((l) => whatwgEncoding.labelToName(l)),
    supported: ["UTF-8", "Shift_JIS", "ISO-2022-JP"].map((n) => whatwgEncoding.isSupported(n)),
    decoded: [
      whatwgEncoding.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x68, 0x69]), "UTF-8"),
      whatwgEncoding.decode(new Uint8Array([0x63, 0x61, 0x66, 0xe9]), "windows-1252"),
      whatwgEncoding.decode(new Uint8Array([0x82, 0xa0, 0x82, 0xa2]), "Shift_JIS"),
      whatwgEncoding.decode(new Uint8Array([0xff, 0xfe, 0x41, 0x00]), "UTF-8"),
    ],
    sniffed: whatwgEncoding.getBOMEncoding(new Uint8Array([0xfe, 0xff, 0, 65])),
  };
}
