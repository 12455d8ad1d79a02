import * as yaml from "js-yaml";

const src = `
server:
  host: example.com
  ports: [80, 443]
  tls: true
users:
  - name: ann
    roles: [admin]
  - name: bob
    since: 2024-01-02
float: 1.5e3
hex: 0x1F
nul: ~
text: >
  folded
  text
`;

export function execute() {
  const doc = yaml.load(src);
  let error = null;
  try {
    yaml.load("a: [1, 2");
  } catch (e) {
    error = e.name + ": " + e.reason;
  }
  return { doc, dumped: yaml.dump(doc, { sortKeys: true, lineWidth: 40 }), error, all: yaml.loadAll("---\na: 1\n---\nb: 2\n") };
}
