package nexmark

import (
	"slices"
	"strconv"
	"sync"
	"unsafe"
)

var (
	usStates   = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	// hotChannels are the channels of hot bids; hot URL i belongs to channel i.
	hotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}
)

const (
	numChannels     = 10_000
	extraStringSize = 1 << 20 // the shared padding string, as Flink's REUSABLE_EXTRA_STRING
	// tablesSeed seeds the process-wide tables (padding string, URLs). Flink
	// draws them from an unseeded RNG once per JVM; a fixed seed keeps runs
	// equal.
	tablesSeed = 0x6e65786d61726b // "nexmark"
)

// tables are built once per process: person names (first x last), the
// padding string, the 4 hot URLs and the 10,000 channel names and URLs,
// and the cities, states and hot channels. Every string a generator puts
// in an event comes from its tables or from its arena.
type stringTables struct {
	names       []string // firstNames[i] + " " + lastNames[j] at i*len(lastNames)+j
	extra       string
	hotURLs     [4]string
	channels    []string
	channelURLs []string
	cities      []string
	states      []string
	hotChannels []string
	reg         *region // holding the strings (offHeapTables), or nil
}

var tables = sync.OnceValue(func() *stringTables {
	t := &stringTables{cities: usCities, states: usStates, hotChannels: hotChannels}
	for _, f := range firstNames {
		for _, l := range lastNames {
			t.names = append(t.names, f+" "+l)
		}
	}
	// The padding string is built as Flink's nextExactString for long
	// lengths: 6 characters per nextInt(), 'a' + rnd%26 with Java's
	// truncating remainder, so negative draws give 'H'..'`'.
	r := newSplitRand(tablesSeed)
	b := make([]byte, extraStringSize)
	var rnd, n int32
	for i := range b {
		if n == 0 {
			rnd, n = r.nextInt(), 6
		}
		b[i] = byte('a' + rnd%26)
		rnd /= 26
		n--
	}
	t.extra = string(b)
	// Hot URLs first, then the channel cache, from one RNG, as Flink's
	// BidGenerator static initialisation.
	r = newSplitRand(mix64(tablesSeed))
	for i := range t.hotURLs {
		t.hotURLs[i] = baseURL(&r)
	}
	t.channels = make([]string, numChannels)
	t.channelURLs = make([]string, numChannels)
	for i := range numChannels {
		url := baseURL(&r)
		if r.intn(10) > 0 {
			url += "&channel_id=" + strconv.Itoa(int(abs32(reverse32(int32(i)))))
		}
		t.channels[i] = "channel-" + strconv.Itoa(i)
		t.channelURLs[i] = url
	}
	return t
})

// offHeapTables is a copy of tables whose strings are in a region mapped
// for the life of the process (about 1.7 MB): the strings of a Memory's
// events, which must not point into the Go heap, come from it.
var offHeapTables = sync.OnceValue(func() *stringTables {
	t := tables()
	r := new(region)
	strs := func(ss []string) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = r.str(s)
		}
		return out
	}
	o := &stringTables{names: strs(t.names), extra: r.str(t.extra), channels: strs(t.channels),
		channelURLs: strs(t.channelURLs), cities: strs(t.cities), states: strs(t.states), hotChannels: strs(t.hotChannels)}
	copy(o.hotURLs[:], strs(t.hotURLs[:]))
	o.reg = r
	return o
})

func reverse32(v int32) int32 {
	u := uint32(v)
	var o uint32
	for range 32 {
		o = o<<1 | u&1
		u >>= 1
	}
	return int32(o)
}

// abs32 is Java's Math.abs(int): MinInt32 stays negative.
func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}

func baseURL(r *splitRand) string {
	var buf [8]byte
	s := "https://www.nexmark.com/"
	for range 3 {
		s += string(randString(r, buf[:0], 5, '_')) + "/"
	}
	return s + "item.htm?query=1"
}

// randString appends to dst a random string as the generator's
// nextString(maxLength, special): 3..maxLength-1 characters, each special
// with probability 1/13, else a lower-case letter; then trimmed as Java's
// String.trim (which only matters when special is a space).
func randString(r *splitRand, dst []byte, maxLength int32, special byte) []byte {
	n := int(3 + r.intn(maxLength-3))
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	s := dst[start:]
	seed := r.seed
	var v int32
	for i := range s {
		if v, seed = draw13(seed); v == 0 {
			s[i] = special
		} else {
			v, seed = draw26(seed)
			s[i] = byte('a' + v)
		}
	}
	r.seed = seed
	if special > ' ' {
		return dst
	}
	lo, hi := 0, len(s)
	for lo < hi && s[lo] <= ' ' {
		lo++
	}
	for hi > lo && s[hi-1] <= ' ' {
		hi--
	}
	if lo > 0 {
		copy(s, s[lo:hi])
	}
	return dst[:start+hi-lo]
}

// arena hands out strings carved from large byte chunks, so generated
// strings cost no allocation each. Bytes are never written after they are
// handed out; a chunk lives as long as any string in it.
// With reg set (a Memory's generators; then tab is offHeapTables), the
// chunks, and the generator's person and auction slabs, are carved from
// that region instead of the heap, so the events are wholly outside it.
type arena struct {
	buf []byte
	reg *region
}

const arenaChunk = 64 << 10

func (a *arena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cap(a.buf)-len(a.buf) < len(b) {
		a.buf = regionSlice[byte](a.reg, max(arenaChunk, len(b)))[:0]
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return unsafe.String(&a.buf[start], len(b))
}
