export function execute() {
  return { big: 10n ** 20n };
}
