// One of two modules declaring the same top-level names (see ../names.mjs).
export class APIError extends Error {}
APIError.prototype.name = "APIError";
export function helper() { return helper.name; }
export const arrow = () => 1;
