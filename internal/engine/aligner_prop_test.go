package engine

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// channelRecords returns the records (not watermarks) of a task's channel
// state, by channel ("I.C").
func channelRecords(t *rapid.T, data []byte) map[string][]string {
	out := map[string][]string{}
	if len(data) == 0 {
		return out
	}
	var s taskChannelState
	if err := decodeGob(data, &s); err != nil {
		t.Fatal(err)
	}
	for gi, g := range s.Gates {
		for ch, b := range g.Data {
			dec := gob.NewDecoder(bytes.NewReader(b))
			for {
				var e inflight[string]
				if err := dec.Decode(&e); err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatal(err)
					}
					break
				}
				k := fmt.Sprintf("%d.%d", gi+1, ch)
				out[k] = append(out[k], values(e.Recs)...)
			}
		}
	}
	return out
}

// TestAlignerCutProperty drives the two-input task with random records,
// barriers (some producers skip checkpoints, as after an upstream abort;
// some checkpoints are savepoints), ends and clock advances, in every mode,
// and holds each acknowledged checkpoint against the model of a consistent
// cut: the records the operator had processed at the snapshot plus the
// recorded channel state are exactly, without duplicates, the records each
// producer sent before its barrier (all records of a producer that ended
// without it). Aligned checkpoints and savepoints have no channel state;
// at-least-once snapshots contain at least the records before the
// barriers. At the end every record was processed exactly once, in
// per-channel order.
func TestAlignerCutProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		mode := rapid.SampledFrom([]string{"aligned", "at-least-once", "unaligned", "timeout"}).Draw(rt, "mode")
		var args []string
		switch mode {
		case "at-least-once":
			args = []string{"at-least-once"}
		case "unaligned":
			args = []string{"unaligned"}
		case "timeout":
			args = []string{"unaligned", fmt.Sprintf("timeout=%d", rapid.IntRange(1, 30).Draw(rt, "timeout"))}
		}
		r := newScenRig(t, args)
		producers := []string{"1.0", "1.1", "2.0"}
		sent := map[string][]string{}
		before := map[int64]map[string]int{} // checkpoint -> producer -> records sent before its barrier
		lastSent := map[string]int64{}
		ended := map[string]bool{}
		savepoint := map[int64]bool{}
		triggered, trigTime := int64(0), map[int64]int64{}
		var trace []string
		step := func(f ...string) {
			trace = append(trace, fmt.Sprint(f))
			if err := r.do(f); err != nil {
				rt.Fatalf("%v: %v", f, err)
			}
			r.collect()
			trace = append(trace, r.log.String())
			r.log.Reset()
		}
		defer func() {
			if rt.Failed() {
				rt.Log(strings.Join(trace, "\n"))
			}
		}()
		n := rapid.IntRange(1, 80).Draw(rt, "steps")
		for i := range n {
			p := rapid.SampledFrom(producers).Draw(rt, "producer")
			switch rapid.IntRange(0, 9).Draw(rt, "action") {
			case 0, 1, 2, 3:
				if ended[p] {
					continue
				}
				v := fmt.Sprintf("%s#%d", p, i)
				sent[p] = append(sent[p], v)
				if rapid.Bool().Draw(rt, "queue") {
					step("queue", p, v)
				} else {
					step("rec", p, v)
				}
			case 4:
				triggered++
				trigTime[triggered] = r.clk.NowMillis()
				savepoint[triggered] = rapid.IntRange(0, 4).Draw(rt, "savepoint") == 0
				before[triggered] = map[string]int{}
			case 5, 6, 7:
				if ended[p] || triggered == 0 || lastSent[p] >= triggered {
					continue
				}
				id := triggered
				before[id][p] = len(sent[p])
				lastSent[p] = id
				opts := []string{"barrier", p, fmt.Sprint(id), fmt.Sprintf("at=%d", trigTime[id])}
				if savepoint[id] {
					opts = append(opts, "savepoint")
				}
				step(opts...)
			case 8:
				step("advance", fmt.Sprint(rapid.IntRange(1, 20).Draw(rt, "ms")))
			case 9:
				if rapid.IntRange(0, 3).Draw(rt, "end") == 0 && !ended[p] {
					ended[p] = true
					step("end", p)
				}
			}
		}
		for _, p := range producers {
			if !ended[p] {
				ended[p] = true
				step("end", p)
			}
		}
		r.collect()
		// Every acknowledged checkpoint is a consistent cut.
		for id, ack := range r.acked {
			var chans map[string][]string
			for _, op := range ack.Ops {
				chans = channelRecords(rt, op.ChannelState)
			}
			got := slices.Clone(r.snapped[id])
			for _, vs := range chans {
				got = append(got, vs...)
			}
			var want []string
			for _, p := range producers {
				k, ok := before[id][p]
				if !ok {
					// No barrier: the producer must have ended, and all
					// its records are before the cut.
					k = len(sent[p])
				}
				want = append(want, sent[p][:k]...)
			}
			slices.Sort(got)
			slices.Sort(want)
			if mode == "at-least-once" {
				for _, w := range want {
					if _, found := slices.BinarySearch(got, w); !found {
						rt.Fatalf("checkpoint %d: snapshot misses %s (snapshot %v)", id, w, got)
					}
				}
				continue
			}
			if !slices.Equal(got, want) {
				rt.Fatalf("checkpoint %d (%s): snapshot %v + channel state %v\nwant the records before the barriers %v", id, mode, r.snapped[id], chans, want)
			}
			if (mode == "aligned" || savepoint[id]) && len(chans) > 0 {
				rt.Fatalf("checkpoint %d is aligned but has channel state %v", id, chans)
			}
			for _, p := range producers {
				if _, ok := before[id][p]; !ok && !ended[p] {
					rt.Fatalf("checkpoint %d acknowledged without a barrier from %s", id, p)
				}
			}
		}
		// Every record processed exactly once, in per-producer order.
		processed := append(values(r.s[0].recs), values(r.s[1].recs)...)
		for _, p := range producers {
			var got []string
			for _, v := range processed {
				if len(v) > 3 && v[:3] == p {
					got = append(got, v)
				}
			}
			if !slices.Equal(got, sent[p]) {
				rt.Fatalf("producer %s: processed %v, sent %v", p, got, sent[p])
			}
		}
		if r.task.aligner.Held() != 0 {
			rt.Fatalf("%d batches still held at the end", r.task.aligner.Held())
		}
	})
}
