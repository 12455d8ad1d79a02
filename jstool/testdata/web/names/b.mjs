// The other module declaring the same top-level names (see ../names.mjs).
export class APIError extends Error {}
export function helper() { return helper.name; }
export const arrow = () => 2;
