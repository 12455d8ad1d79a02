export function execute() {}
