// dsl.emit: the outputs step TraceMind's compiler ends every flow with (the
// workflow's `outputs:`). Its with is the outputs, references resolved; its
// output is that object, as TraceMind's emit_outputs makes it the flow's
// outputs (tm/dsl/runtime.py).

export function execute(outputs: Record<string, unknown>) {
  if (outputs === null || typeof outputs !== "object" || Array.isArray(outputs)) {
    throw new TypeError("dsl.emit: the outputs must be an object");
  }
  return outputs;
}
