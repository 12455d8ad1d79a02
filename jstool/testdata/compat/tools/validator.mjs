import validator from "validator";

export function execute() {
  return {
    email: ["ann@example.com", "bad@", "a.b+c@sub.example.co.uk"].map((s) => validator.isEmail(s)),
    url: ["https://example.com/x?y=1", "ftp//nope", "http://localhost:8080"].map((s) => validator.isURL(s, { require_tld: false })),
    ip: [validator.isIP("192.168.0.1"), validator.isIP("::1", 6), validator.isIP("999.1.1.1")],
    uuid: validator.isUUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    card: validator.isCreditCard("4111111111111111"),
    escape: validator.escape("<a href='x'>&</a>"),
    normalize: validator.normalizeEmail("Ann.Lee+tag@GMAIL.com"),
    iso: validator.isISO8601("2024-02-29T12:00:00Z"),
    json: validator.isJSON('{"a":1}'),
    numeric: [validator.isNumeric("12.5"), validator.isInt("12.5"), validator.toFloat("3.25")],
    slug: validator.isSlug("hello-world"),
  };
}
