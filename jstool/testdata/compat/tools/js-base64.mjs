import { Base64 } from "js-base64";

export function execute() {
  const s = "小飼弾 ünïcödé 𝌆 <>?";
  return {
    encoded: Base64.encode(s),
    uri: Base64.encodeURI(s),
    decoded: Base64.decode(Base64.encode(s)),
    u8: Base64.fromUint8Array(new Uint8Array([0, 255, 128, 64])),
    toU8: Array.from(Base64.toUint8Array("AP+AQA==")),
    valid: [Base64.isValid("YWJj"), Base64.isValid("a$b")],
    btoa: Base64.btoa("binary\x00\xff"),
  };
}
