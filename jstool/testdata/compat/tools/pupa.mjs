import pupa from "pupa";

export function execute() {
  let error = null;
  try {
    pupa("{missing}", {}, { ignoreMissing: false });
  } catch (e) {
    error = { name: e.name, key: e.key, message: e.message };
  }
  return {
    object: pupa("The mobile number of {name} is {phone.mobile}", { name: "Sindre", phone: { mobile: "609 24 363" } }),
    array: pupa("I like {0} and {1}", ["🦄", "🐮"]),
    escaped: pupa("<b>{{name}}</b> {name}", { name: "<x>&" }),
    transform: pupa("{a} {b}", { a: 1, b: 2 }, { transform: ({ value, key }) => (key === "a" ? value * 10 : value) }),
    error,
  };
}
