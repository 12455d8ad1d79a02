// The default export is a promise: its resolution is the result.
export default new Promise<{ late: boolean }>((resolve) => setTimeout(() => resolve({ late: true }), 10));
