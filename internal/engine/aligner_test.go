package engine

import (
	"context"
	"fmt"
	"testing"
)

// alignRig is a two-input task's input side, driven step by step: two
// gates (input 1 with two channels, input 2 with one) sharing one aligner,
// fed through real exchanges so held batches keep their credits.
type alignRig struct {
	t       *testing.T
	a       *Aligner
	g       [2]*Gate[string]
	s       [2]*sink[string]
	x       [2]*Exchange[string]
	w       [3]*Writer[string]
	inbox   chan message
	snaps   []string // what every sink had seen when each snapshot was taken
	aborted []int64
}

func newAlignRig(t *testing.T, exactlyOnce bool) *alignRig {
	r := &alignRig{t: t, inbox: make(chan message, 64)}
	r.a = NewAligner(exactlyOnce, func(id int64) error {
		r.snaps = append(r.snaps, fmt.Sprintf("cp%d:%d/%d", id, len(r.s[0].recs), len(r.s[1].recs)))
		return nil
	}, func(id int64) { r.aborted = append(r.aborted, id) })
	ctx := context.Background()
	// Input 1: two producers rebalanced into one consumer (two channels);
	// input 2: one producer forwarded to one consumer.
	for i, chans := range []int{2, 1} {
		r.s[i] = &sink[string]{}
		r.g[i] = NewGate[string](chans, r.s[i])
		r.g[i].SetAligner(r.a, i)
		kind := PartitionRebalance
		if chans == 1 {
			kind = PartitionForward
		}
		x, err := NewExchange[string](kind, nil, chans, 1, ExchangeConfig{BatchSize: 100, Credits: 8})
		if err != nil {
			t.Fatal(err)
		}
		r.x[i] = x
		x.Attach(0, r.g[i], 0, r.inbox)
	}
	r.w[0] = r.x[0].Writer(ctx, 0, nil)
	r.w[1] = r.x[0].Writer(ctx, 1, nil)
	r.w[2] = r.x[1].Writer(ctx, 0, nil)
	return r
}

// rec sends one record on writer i and delivers everything queued.
func (r *alignRig) rec(i int, v string) {
	r.t.Helper()
	must(r.t, r.w[i].ProcessBatch([]Record[string]{{Value: v}}))
	must(r.t, r.w[i].Flush())
	r.drain()
}

func (r *alignRig) barrier(i int, id int64) {
	r.t.Helper()
	must(r.t, r.w[i].Barrier(Barrier{ID: id}))
	r.drain()
}

func (r *alignRig) end(i int) {
	r.t.Helper()
	must(r.t, r.w[i].EndInput())
	r.drain()
}

func (r *alignRig) drain() {
	r.t.Helper()
	for {
		select {
		case m := <-r.inbox:
			must(r.t, m.process())
		default:
			return
		}
	}
}

func (r *alignRig) seen() string {
	return fmt.Sprintf("%v|%v", values(r.s[0].recs), values(r.s[1].recs))
}

func values(recs []Record[string]) []string {
	out := make([]string, len(recs))
	for i, x := range recs {
		out[i] = x.Value
	}
	return out
}

func TestAlignmentBlocksChannelsUntilAllBarriersArrive(t *testing.T) {
	r := newAlignRig(t, true)
	r.rec(0, "a1")
	r.barrier(0, 1) // input 1 channel 0 delivered barrier 1: blocked
	r.rec(0, "a2")  // held: after the barrier
	r.rec(1, "b1")  // channel 1 has no barrier yet: processed
	r.rec(2, "c1")  // input 2: processed
	if got, want := r.seen(), "[a1 b1]|[c1]"; got != want {
		t.Fatalf("before alignment: %s, want %s", got, want)
	}
	if r.a.Held() != 1 || len(r.snaps) != 0 {
		t.Fatalf("held %d batches, %d snapshots", r.a.Held(), len(r.snaps))
	}
	r.barrier(2, 1) // input 2 aligned too
	r.rec(2, "c2")  // held
	r.barrier(1, 1) // last channel: snapshot, then the held batches go on
	if want := []string{"cp1:2/1"}; fmt.Sprint(r.snaps) != fmt.Sprint(want) {
		t.Fatalf("snapshots %v, want %v (the snapshot must see exactly the records before the barriers)", r.snaps, want)
	}
	if got, want := r.seen(), "[a1 b1 a2]|[c1 c2]"; got != want {
		t.Fatalf("after alignment: %s, want %s", got, want)
	}
	if r.a.Held() != 0 || r.a.Current() != -1 {
		t.Fatalf("held %d, current %d", r.a.Held(), r.a.Current())
	}
}

func TestAtLeastOnceDoesNotBlock(t *testing.T) {
	r := newAlignRig(t, false)
	r.barrier(0, 1)
	r.rec(0, "a1") // not held
	r.barrier(1, 1)
	r.barrier(2, 1)
	if got, want := r.seen(), "[a1]|[]"; got != want || fmt.Sprint(r.snaps) != "[cp1:1/0]" {
		t.Fatalf("seen %s snaps %v", got, r.snaps)
	}
}

func TestNewerBarrierAbortsAlignment(t *testing.T) {
	r := newAlignRig(t, true)
	r.barrier(0, 1)
	r.rec(0, "a1")  // held by checkpoint 1
	r.barrier(1, 2) // a newer checkpoint: 1 is abandoned, a1 is released
	if fmt.Sprint(r.aborted) != "[1]" {
		t.Fatalf("aborted %v", r.aborted)
	}
	if got := r.seen(); got != "[a1]|[]" {
		t.Fatalf("seen %s", got)
	}
	r.barrier(0, 1) // stale: ignored
	r.barrier(0, 2)
	r.barrier(2, 2)
	if fmt.Sprint(r.snaps) != "[cp2:1/0]" {
		t.Fatalf("snapshots %v", r.snaps)
	}
}

func TestEndedChannelCompletesAlignment(t *testing.T) {
	r := newAlignRig(t, true)
	r.barrier(0, 1)
	r.barrier(2, 1)
	r.rec(0, "held")
	r.end(1) // the last channel ends instead of sending the barrier
	if fmt.Sprint(r.snaps) != "[cp1:0/0]" || r.seen() != "[held]|[]" {
		t.Fatalf("snapshots %v, seen %s", r.snaps, r.seen())
	}
}
