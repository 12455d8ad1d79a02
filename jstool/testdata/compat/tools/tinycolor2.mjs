import tinycolor from "tinycolor2";

export function execute() {
  const c = tinycolor("#ff8800");
  return {
    rgb: c.toRgbString(),
    hsl: c.toHslString(),
    hsv: c.toHsv(),
    name: tinycolor("rgb(255, 0, 0)").toName(),
    lighten: c.clone().lighten(20).toHexString(),
    complement: c.complement().toHexString(),
    triad: c.triad().map((x) => x.toHexString()),
    readable: tinycolor.readability("#000", "#fff"),
    mostReadable: tinycolor.mostReadable("#123", ["#124", "#fff", "#000"]).toHexString(),
    mix: tinycolor.mix("#f00", "#00f", 25).toHexString(),
    parsed: ["hsl(120, 50%, 50%)", "rgba(0,0,0,.5)", "nope"].map((s) => [tinycolor(s).isValid(), tinycolor(s).toHex8String()]),
  };
}
