// finish: the terminal node TraceMind's compiler ends every flow with. It
// does nothing and has no output, as in TraceMind's runtime, where a finish
// step has no hook.

export function execute(): void {}
