// Work a tool asks of the host (node:crypto is Go on the host) is charged
// to its fuel: jstool/hostwork_test.go runs an RSA key generation and a
// PBKDF2 derivation under budgets that cover them and budgets that do not.
import { createHash, generateKeyPairSync, pbkdf2Sync } from "node:crypto";

export function execute(params) {
  switch (params.op) {
    case "rsa": {
      const { publicKey } = generateKeyPairSync("rsa", { modulusLength: params.bits });
      return { spki: createHash("sha256").update(publicKey.export({ type: "spki", format: "der" })).digest("hex") };
    }
    case "pbkdf2":
      return { key: pbkdf2Sync("password", "salt", params.iterations, 32, "sha256").toString("hex") };
  }
  throw new Error(`unknown op ${params.op}`);
}
