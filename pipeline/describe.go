package pipeline

import "github.com/wasmgate/wasmgate/internal/sandbox"

// ActionManifest is the manifest of the executor serving action: what a
// tool listing shows of it (title, description, schemas). It reports
// false when a request to the action would be refused before running (see
// Problems): the action is not registered, its executor is missing or
// refused, its schemas do not compile, or its route's requirements are not
// met. The manifest is then what is known of the executor, if anything.
func (r *Registry) ActionManifest(action string) (sandbox.Manifest, bool) {
	route, ok := r.actions[action]
	if !ok {
		return sandbox.Manifest{}, false
	}
	slot, ok := r.executors[route.Executor]
	if !ok || slot.exec == nil {
		return sandbox.Manifest{ExecutorID: route.Executor}, false
	}
	_, _, _, ref := r.resolve(action)
	return slot.exec.Manifest(), ref == nil
}

// ActionManifest is the manifest of the executor serving action; see
// Registry.ActionManifest.
func (p *Pipeline) ActionManifest(action string) (sandbox.Manifest, bool) {
	return p.registry.ActionManifest(action)
}

// Executors lists the ids of the usable executors, sorted (a front serves
// each by its id).
func (r *Registry) Executors() []string {
	var ids []string
	for _, id := range sortedKeys(r.executors) {
		if r.executors[id].exec != nil {
			ids = append(ids, id)
		}
	}
	return ids
}
