package queries

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/nexmark"
)

func TestQ14(t *testing.T) {
	s := generate(smallConfig, testParallelism)
	var want []Q14Result
	types := map[string]int{}
	for _, b := range s.bids {
		p := float64(b.Price) * 0.908
		if p <= 1e6 || p >= 5e7 {
			continue
		}
		hour := (b.DateTime / 1000 / 3600) % 24
		tt := "otherTime"
		if hour >= 8 && hour <= 18 {
			tt = "dayTime"
		} else if hour <= 6 || hour >= 20 {
			tt = "nightTime"
		}
		types[tt]++
		var c int64
		for _, r := range b.Extra {
			if r == 'c' {
				c++
			}
		}
		want = append(want, Q14Result{b.Auction, b.Bidder, p, tt, b.DateTime, b.Extra, c})
	}
	if len(want) == len(s.bids) || len(want) == 0 {
		t.Fatalf("%d of %d bids selected: the filter is not tested", len(want), len(s.bids))
	}
	sameMultiset(t, "q14", run(t, smallConfig, Q14), want)
	// Every time type, through the base time.
	for _, c := range []struct {
		ts   int64
		want string
	}{{8 * 3_600_000, "dayTime"}, {18*3_600_000 + 3_599_999, "dayTime"}, {19 * 3_600_000, "otherTime"},
		{7 * 3_600_000, "otherTime"}, {6 * 3_600_000, "nightTime"}, {20 * 3_600_000, "nightTime"}, {-1, "nightTime"}} {
		if got := bidTimeType(nexmark.DefaultBaseTime + c.ts); got != c.want {
			t.Errorf("bidTimeType(base + %d) = %s, want %s", c.ts, got, c.want)
		}
	}
}

// firstChannelID is Q21's REGEXP_EXTRACT done by hand: the value of the
// first "channel_id=" at the start of url or after an '&'.
func firstChannelID(url string) (string, bool) {
	for i := 0; ; {
		j := strings.Index(url[i:], "channel_id=")
		if j < 0 {
			return "", false
		}
		j += i
		if j == 0 || url[j-1] == '&' {
			v := url[j+len("channel_id="):]
			if k := strings.IndexByte(v, '&'); k >= 0 {
				v = v[:k]
			}
			return v, true
		}
		i = j + 1
	}
}

func TestQ21(t *testing.T) {
	s := generate(smallConfig, testParallelism)
	named := map[string]string{"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
	var want []Q21Result
	dropped, extracted := 0, 0
	for _, b := range s.bids {
		id, ok := named[strings.ToLower(b.Channel)]
		if !ok {
			if id, ok = firstChannelID(b.URL); ok {
				extracted++
			}
		}
		if !ok {
			dropped++
			continue
		}
		want = append(want, Q21Result{b.Auction, b.Bidder, b.Price, b.Channel, id})
	}
	if dropped == 0 || extracted == 0 {
		t.Fatalf("%d dropped, %d extracted: a path is not tested", dropped, extracted)
	}
	sameMultiset(t, "q21", run(t, smallConfig, Q21), want)
	for url, want := range map[string]string{"channel_id=7": "7", "a?x=1&channel_id=&y": "", "xchannel_id=1&channel_id=2&channel_id=3": "2"} {
		if got, ok := channelID("other", url); !ok || got != want {
			t.Errorf("channelID(%q) = %q, %v; want %q", url, got, ok, want)
		}
	}
	if _, ok := channelID("other", "x?achannel_id=5"); ok {
		t.Error("channel_id= after a letter matched")
	}
}

func TestQ22(t *testing.T) {
	s := generate(smallConfig, testParallelism)
	var want []Q22Result
	for _, b := range s.bids {
		p := strings.Split(b.URL, "/")
		part := func(i int) string {
			if i < len(p) {
				return p[i]
			}
			return ""
		}
		want = append(want, Q22Result{b.Auction, b.Bidder, b.Price, b.Channel, part(3), part(4), part(5)})
	}
	sameMultiset(t, "q22", run(t, smallConfig, Q22), want)
	if a, b, c := urlDirs("https://x/a/b"); a != "a" || b != "b" || c != "" {
		t.Errorf("urlDirs of a short URL: %q %q %q", a, b, c)
	}
	// Any string: parts 3, 4 and 5 of strings.Split, "" past the end.
	rapid.Check(t, func(rt *rapid.T) {
		url := rapid.StringOf(rapid.SampledFrom([]rune("/ab"))).Draw(rt, "url")
		p := strings.Split(url, "/")
		part := func(i int) string {
			if i < len(p) {
				return p[i]
			}
			return ""
		}
		if a, b, c := urlDirs(url); a != part(3) || b != part(4) || c != part(5) {
			rt.Fatalf("urlDirs(%q) = %q %q %q, want %q %q %q", url, a, b, c, part(3), part(4), part(5))
		}
	})
}
