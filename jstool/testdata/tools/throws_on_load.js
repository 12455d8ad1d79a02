const config = JSON.parse("{not json");
export function execute() {
  return config;
}
