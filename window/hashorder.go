package window

import (
	"cmp"
	"slices"
)

// javaHashCode is TimeWindow.hashCode in Flink:
// MathUtils.longToIntWithBitMixing(start + end), the SplitMix64 finalizer
// truncated to 32 bits.
func (w TimeWindow) javaHashCode() int32 {
	in := uint64(w.Start + w.End)
	in = (in ^ in>>30) * 0xbf58476d1ce4e5b9
	in = (in ^ in>>27) * 0x94d049bb133111eb
	in ^= in >> 31
	return int32(in)
}

// javaHashSetOrder reorders ws, given in insertion order, into the
// iteration order of a java.util.HashSet<TimeWindow> that the same windows
// were added to in that order. Flink's TimeWindow.mergeWindows collects each
// group of merged windows in such a set (filled in start order), and the
// window operator keeps the contents of the first window in that order and
// appends the others' in that order, so a merged window's contents are in
// Flink's order only if the group is.
//
// A HashMap starts with 16 buckets and doubles them whenever its size
// exceeds three quarters of them; a key's bucket is its spread hash
// (h ^ h>>>16) masked by the bucket count; iteration walks the buckets in
// order and each bucket in insertion order (resizing splits a bucket
// keeping the order). The one case not modelled is a bucket turned into a
// tree (nine windows of one merge in one bucket of a table of 64 or more),
// where Java's order depends on the tree's shape.
func javaHashSetOrder(ws []TimeWindow) {
	if len(ws) < 2 {
		return
	}
	buckets := 16
	for len(ws) > buckets/4*3 {
		buckets *= 2
	}
	bucket := func(w TimeWindow) uint32 {
		h := uint32(w.javaHashCode())
		return (h ^ h>>16) & uint32(buckets-1)
	}
	slices.SortStableFunc(ws, func(a, b TimeWindow) int { return cmp.Compare(bucket(a), bucket(b)) })
}
