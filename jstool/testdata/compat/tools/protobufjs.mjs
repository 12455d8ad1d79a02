import protobuf from "protobufjs";

const proto = `
syntax = "proto3";
package shop;
message Item { string name = 1; uint32 qty = 2; double price = 3; repeated string tags = 4; Kind kind = 5; int64 big = 6; }
enum Kind { UNKNOWN = 0; FOOD = 1; TOOL = 2; }
message Order { repeated Item items = 1; map<string, string> meta = 2; }
`;

export function execute() {
  const root = protobuf.parse(proto).root;
  const Order = root.lookupType("shop.Order");
  const payload = { items: [{ name: "apple", qty: 3, price: 0.5, tags: ["fruit"], kind: 1, big: "9007199254740993" }, { name: "saw", qty: 1, price: 12.25, kind: 2 }], meta: { by: "ann" } };
  const err = Order.verify({ items: [{ qty: -1 }] });
  const bytes = Order.encode(Order.fromObject(payload)).finish();
  const decoded = Order.decode(bytes);
  return {
    hex: Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(""),
    decoded: Order.toObject(decoded, { longs: String, enums: String, defaults: true }),
    json: root.toJSON(),
    verifyError: err,
  };
}
