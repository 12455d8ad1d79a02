export function area(s) {
  switch (s.kind) {
    case "square": return s.side * s.side;
    case "rect": return s.w * s.h;
    default: throw new RangeError("unknown shape " + JSON.stringify(s.kind));
  }
}
