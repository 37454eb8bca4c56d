// Package sketch holds the space-saving heavy-hitters sketch (Metwally,
// Agrawal and El Abbadi, 2005) that Weir keeps at each keyBy on a sample
// of the records, to name the hottest keys of a skewed stream.
//
// A sketch of capacity m counts at most m distinct items. An item not in
// a full sketch replaces the item with the lowest count c, starting at
// c+1 with error c: every count overestimates the item's true count by at
// most its error, and any item whose true count exceeds n/m (n items
// offered) is in the sketch.
package sketch

import (
	"sort"
	"sync"
)

// Item is one counted item of a SpaceSaving sketch.
type Item struct {
	Key string
	// Count is an upper bound of how often Key was offered; Count - Error
	// is a lower bound.
	Count int64
	Error int64
	// Tag is the tag given with the item's last Offer (Weir: the subtask
	// its key goes to).
	Tag int
}

// SpaceSaving is a space-saving sketch, safe for concurrent use: the
// writer offers items in batches (one lock per batch), readers take Top.
type SpaceSaving struct {
	mu    sync.Mutex
	cap   int
	items []Item
	index map[string]int
	total int64
}

// NewSpaceSaving returns a sketch that counts at most capacity items.
func NewSpaceSaving(capacity int) *SpaceSaving {
	capacity = max(capacity, 1)
	return &SpaceSaving{cap: capacity, index: make(map[string]int, capacity)}
}

// Lock takes the sketch for a batch of OfferLocked calls.
func (s *SpaceSaving) Lock() { s.mu.Lock() }

// Unlock ends a batch.
func (s *SpaceSaving) Unlock() { s.mu.Unlock() }

// Offer counts one occurrence of key, tagged with tag.
func (s *SpaceSaving) Offer(key string, tag int) {
	s.mu.Lock()
	s.OfferLocked(key, tag)
	s.mu.Unlock()
}

// OfferLocked is Offer between Lock and Unlock.
func (s *SpaceSaving) OfferLocked(key string, tag int) {
	s.total++
	if i, ok := s.index[key]; ok {
		s.items[i].Count++
		s.items[i].Tag = tag
		return
	}
	if len(s.items) < s.cap {
		s.index[key] = len(s.items)
		s.items = append(s.items, Item{Key: key, Count: 1, Tag: tag})
		return
	}
	m := 0
	for i := 1; i < len(s.items); i++ {
		if s.items[i].Count < s.items[m].Count {
			m = i
		}
	}
	old := s.items[m]
	delete(s.index, old.Key)
	s.index[key] = m
	s.items[m] = Item{Key: key, Count: old.Count + 1, Error: old.Count, Tag: tag}
}

// Total returns how many items were offered.
func (s *SpaceSaving) Total() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Top returns up to n items with the highest counts, highest first (ties
// by key), and the total number of items offered.
func (s *SpaceSaving) Top(n int) ([]Item, int64) {
	s.mu.Lock()
	out := append([]Item(nil), s.items...)
	total := s.total
	s.mu.Unlock()
	sortItems(out)
	if len(out) > n {
		out = out[:n]
	}
	return out, total
}

func sortItems(items []Item) {
	sort.Slice(items, func(a, b int) bool {
		if items[a].Count != items[b].Count {
			return items[a].Count > items[b].Count
		}
		return items[a].Key < items[b].Key
	})
}

// Merge combines the tops of several sketches (of one keyBy's producer
// subtasks) into one list: counts and errors of equal keys add up, as
// in Agarwal et al.'s mergeable summaries (an item missing from a sketch
// counts 0 there, which keeps Count an upper bound only up to that
// sketch's minimum; the result is for display and diagnosis).
func Merge(n int, tops ...[]Item) []Item {
	byKey := map[string]*Item{}
	var order []string
	for _, top := range tops {
		for _, it := range top {
			if e, ok := byKey[it.Key]; ok {
				e.Count += it.Count
				e.Error += it.Error
				continue
			}
			c := it
			byKey[it.Key] = &c
			order = append(order, it.Key)
		}
	}
	out := make([]Item, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	sortItems(out)
	if len(out) > n {
		out = out[:n]
	}
	return out
}
