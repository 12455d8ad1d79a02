import ini from "ini";

const src = `; comment
scope = global

[database]
user = dbuser
password = dbpassword
database = use_this_database

[paths.default]
datadir = /var/lib/data
array[] = first value
array[] = second value
array[] = third value
`;

export function execute() {
  const config = ini.parse(src);
  config.scope = "local";
  config.database.database = "use_another_database";
  return { config, encoded: ini.stringify(config, { section: "section" }), safe: ini.safe("a=b;c") };
}
