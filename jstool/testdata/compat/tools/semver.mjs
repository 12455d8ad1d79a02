import semver from "semver";

export function execute() {
  const versions = ["1.2.3", "1.10.0", "1.2.10", "2.0.0-beta.1", "2.0.0", "0.9.9"];
  return {
    sorted: semver.sort([...versions]),
    maxSatisfying: semver.maxSatisfying(versions, "^1.2.0"),
    satisfies: [semver.satisfies("1.5.0", ">=1.2.3 <2"), semver.satisfies("2.0.0-beta.1", "^2.0.0-alpha", { includePrerelease: true })],
    inc: [semver.inc("1.2.3", "minor"), semver.inc("1.2.3", "prerelease", "rc"), semver.inc("1.2.3-rc.0", "patch")],
    coerce: semver.coerce("v3.4 beta").version,
    range: new semver.Range("~1.2 || >=3.0.0 <3.1").range,
    diff: semver.diff("1.2.3", "1.3.0"),
    valid: [semver.valid("1.2.3"), semver.valid("1.2")],
  };
}
