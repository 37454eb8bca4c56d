package state

// Stats returns the number of state entries (one per key and namespace
// of each registered state; a list or map counts once) and how many of
// the registered states have no TTL. It costs one step per registered
// state.
func (b *Backend[K]) Stats() (entries, withoutTTL int) {
	for _, r := range b.states {
		entries += r.ops.count()
		if !r.ttl.Enabled() {
			withoutTTL++
		}
	}
	return entries, withoutTTL
}
