package kafka

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Offsets tells where a source starts reading each partition
// (WithStartingOffsets) or, in bounded mode, where it stops (WithBounded):
// Flink's OffsetsInitializer. Every Offsets is resolved to a concrete
// offset per partition when the partition is first assigned, so a restore
// reads from exactly where the failed run would have.
type Offsets struct {
	kind     offsetKind
	ts       int64
	specific map[TopicPartition]int64
	fallback *Offsets
}

type offsetKind int

const (
	offEarliest offsetKind = iota
	offLatest
	offCommitted
	offTimestamp
	offSpecific
)

// Earliest is the first offset still in each partition (the default).
func Earliest() Offsets { return Offsets{kind: offEarliest} }

// Latest is the end of each partition when it is assigned: only records
// written afterwards are read. With WithReadCommitted, the last stable
// offset.
func Latest() Offsets { return Offsets{kind: offLatest} }

// Committed is the offset the consumer group (WithGroupID) committed for
// each partition, or fallback where it committed none.
func Committed(fallback Offsets) Offsets {
	return Offsets{kind: offCommitted, fallback: &fallback}
}

// Timestamp is, per partition, the first record whose timestamp is at or
// after ms (milliseconds since the epoch), or the end of the partition if
// there is none.
func Timestamp(ms int64) Offsets { return Offsets{kind: offTimestamp, ts: ms} }

// Specific gives the offset of each partition explicitly; partitions not
// in the map use fallback.
func Specific(offsets map[TopicPartition]int64, fallback Offsets) Offsets {
	m := make(map[TopicPartition]int64, len(offsets))
	for k, v := range offsets {
		m[k] = v
	}
	return Offsets{kind: offSpecific, specific: m, fallback: &fallback}
}

func (o Offsets) String() string {
	switch o.kind {
	case offEarliest:
		return "earliest"
	case offLatest:
		return "latest"
	case offCommitted:
		return "committed (else " + o.fallback.String() + ")"
	case offTimestamp:
		return fmt.Sprintf("timestamp %d", o.ts)
	default:
		return fmt.Sprintf("specific %v (else %s)", o.specific, o.fallback)
	}
}

func (o Offsets) validate(group string) error {
	switch o.kind {
	case offCommitted:
		if group == "" {
			return fmt.Errorf("committed offsets need a consumer group (WithGroupID)")
		}
	case offSpecific:
		for tp, off := range o.specific {
			if off < 0 {
				return fmt.Errorf("offset %d for %s is negative", off, tp)
			}
		}
	case offTimestamp:
		if o.ts < 0 {
			return fmt.Errorf("timestamp %d is negative", o.ts)
		}
	}
	if o.fallback != nil {
		return o.fallback.validate(group)
	}
	return nil
}

// resolver lists offsets through the admin client.
type resolver struct {
	adm           *kadm.Client
	group         string
	readCommitted bool
}

func topicsOf(tps []TopicPartition) []string {
	seen := map[string]bool{}
	var out []string
	for _, tp := range tps {
		if !seen[tp.Topic] {
			seen[tp.Topic] = true
			out = append(out, tp.Topic)
		}
	}
	sort.Strings(out)
	return out
}

// resolve returns the offset o gives each partition of tps.
func (r resolver) resolve(ctx context.Context, o Offsets, tps []TopicPartition) (map[TopicPartition]int64, error) {
	out := make(map[TopicPartition]int64, len(tps))
	if len(tps) == 0 {
		return out, nil
	}
	topics := topicsOf(tps)
	fromListed := func(l kadm.ListedOffsets, err error, what string) error {
		if err != nil {
			return fmt.Errorf("listing %s offsets of %v: %w", what, topics, err)
		}
		for _, tp := range tps {
			lo, ok := l.Lookup(tp.Topic, tp.Partition)
			if !ok {
				return fmt.Errorf("listing %s offsets: no answer for %s", what, tp)
			}
			if lo.Err != nil {
				return fmt.Errorf("listing %s offset of %s: %w", what, tp, lo.Err)
			}
			out[tp] = lo.Offset
		}
		return nil
	}
	var rest []TopicPartition // for the fallback
	switch o.kind {
	case offEarliest:
		l, err := r.adm.ListStartOffsets(ctx, topics...)
		return out, fromListed(l, err, "earliest")
	case offLatest:
		l, err := r.end(ctx, topics)
		return out, fromListed(l, err, "latest")
	case offTimestamp:
		l, err := r.adm.ListOffsetsAfterMilli(ctx, o.ts, topics...)
		if err := fromListed(l, err, "timestamp"); err != nil {
			return out, err
		}
		end, err := r.end(ctx, topics)
		if err != nil {
			return out, fmt.Errorf("listing latest offsets of %v: %w", topics, err)
		}
		for _, tp := range tps {
			if out[tp] < 0 { // no record at or after the timestamp
				lo, _ := end.Lookup(tp.Topic, tp.Partition)
				out[tp] = lo.Offset
			}
		}
		return out, nil
	case offCommitted:
		resp, err := r.adm.FetchOffsetsForTopics(ctx, r.group, topics...)
		if err != nil {
			return out, fmt.Errorf("fetching the committed offsets of group %q: %w", r.group, err)
		}
		for _, tp := range tps {
			c, ok := resp.Lookup(tp.Topic, tp.Partition)
			if ok && c.Err == nil && c.At >= 0 {
				out[tp] = c.At
			} else {
				rest = append(rest, tp)
			}
		}
	case offSpecific:
		for _, tp := range tps {
			if off, ok := o.specific[tp]; ok {
				out[tp] = off
			} else {
				rest = append(rest, tp)
			}
		}
	}
	if len(rest) > 0 {
		fb, err := r.resolve(ctx, *o.fallback, rest)
		if err != nil {
			return out, err
		}
		for tp, off := range fb {
			out[tp] = off
		}
	}
	return out, nil
}

// end lists the end offsets: the last stable offsets when reading only
// committed records.
func (r resolver) end(ctx context.Context, topics []string) (kadm.ListedOffsets, error) {
	if r.readCommitted {
		return r.adm.ListCommittedOffsets(ctx, topics...)
	}
	return r.adm.ListEndOffsets(ctx, topics...)
}
