package state

// Exists reports whether the current key and namespace hold an entry of
// the handle's state, expired or not (TTL is not consulted). The entry
// found is cached, so a read or update of the same key and namespace that
// follows costs no second lookup. The window operator uses it to learn
// whether an element is the first of its window.
func (h *handle[K, N, S]) Exists() bool { return h.lookup() != nil }
