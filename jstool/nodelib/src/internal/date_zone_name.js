"use strict";
// Date.prototype.toString and toTimeString as V8 prints them: the engine's
// "GMT+0000" followed by the zone's name, which V8 takes from ICU. The
// sandbox's zone is always UTC (the engine's clock and offset are), so the
// name is always node's for TZ=UTC in English. A bundle gets this module
// when its code names Date (see jstool/bundle.go).
const ZONE_NAME = " (Coordinated Universal Time)";
for (const name of ["toString", "toTimeString"]) {
  const engine = Date.prototype[name];
  Object.defineProperty(Date.prototype, name, {
    value: {
      [name]() {
        const s = engine.call(this);
        return s === "Invalid Date" ? s : s + ZONE_NAME;
      },
    }[name],
    writable: true, enumerable: false, configurable: true,
  });
}
