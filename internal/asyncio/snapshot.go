package asyncio

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/weirstream/weir/state"
)

// The operator state of one subtask: a version byte, the element count
// (uvarint), then per element its kind byte and, for a record, its
// timestamp (zig-zag varint) and value (the codec's encoding), for a
// watermark the watermark (zig-zag varint).
const snapshotVersion = 1

// Encode encodes a snapshot's elements.
func Encode[IN any](els []Element[IN], c state.Codec[IN]) ([]byte, error) {
	out := []byte{snapshotVersion}
	out = binary.AppendUvarint(out, uint64(len(els)))
	for i, el := range els {
		out = append(out, byte(el.Kind))
		out = binary.AppendVarint(out, el.TS)
		if el.Kind != KindRecord {
			continue
		}
		var err error
		if out, err = c.Append(out, el.Value); err != nil {
			return nil, fmt.Errorf("encoding in-flight record %d (%v): %w", i, el.Value, err)
		}
	}
	return out, nil
}

// Decode decodes what Encode wrote.
func Decode[IN any](data []byte, c state.Codec[IN]) ([]Element[IN], error) {
	if len(data) == 0 {
		return nil, nil
	}
	if data[0] != snapshotVersion {
		return nil, fmt.Errorf("async operator state: unknown version %d", data[0])
	}
	n, k := binary.Uvarint(data[1:])
	if k <= 0 {
		return nil, errors.New("async operator state: bad element count")
	}
	rest := data[1+k:]
	if n > uint64(len(rest)) {
		return nil, fmt.Errorf("async operator state: %d elements in %d bytes", n, len(rest))
	}
	els := make([]Element[IN], 0, n)
	for i := uint64(0); i < n; i++ {
		if len(rest) == 0 {
			return nil, fmt.Errorf("async operator state: truncated at element %d", i)
		}
		el := Element[IN]{Kind: Kind(rest[0])}
		if el.Kind != KindRecord && el.Kind != KindWatermark {
			return nil, fmt.Errorf("async operator state: element %d has unknown kind %d", i, rest[0])
		}
		ts, k := binary.Varint(rest[1:])
		if k <= 0 {
			return nil, fmt.Errorf("async operator state: bad timestamp at element %d", i)
		}
		el.TS, rest = ts, rest[1+k:]
		if el.Kind == KindRecord {
			v, r, err := c.Decode(rest)
			if err != nil {
				return nil, fmt.Errorf("async operator state: decoding record %d: %w", i, err)
			}
			el.Value, rest = v, r
		}
		els = append(els, el)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("async operator state: %d bytes after the last element", len(rest))
	}
	return els, nil
}

// Restore returns the elements subtask sub of par re-issues, from the
// snapshots of every old subtask (all, by old index). At the same
// parallelism a subtask takes its own snapshot whole, watermarks included.
// At another one, as Flink redistributes the operator's list state, the
// old subtasks' records are concatenated in subtask order and split into
// contiguous runs, the first ones one longer when they do not divide
// evenly; watermarks are dropped then (in Flink they travel with the
// records and may end up ahead of records of another old subtask, which
// would then be late downstream; here the restored operator's watermark
// comes from its new input only).
func Restore[IN any](all [][]byte, sub, par int, c state.Codec[IN]) ([]Element[IN], error) {
	if len(all) == 0 {
		return nil, nil
	}
	if len(all) == par {
		return Decode(all[sub], c)
	}
	var recs []Element[IN]
	for i, data := range all {
		els, err := Decode(data, c)
		if err != nil {
			return nil, fmt.Errorf("old subtask %d: %w", i, err)
		}
		for _, el := range els {
			if el.Kind == KindRecord {
				recs = append(recs, el)
			}
		}
	}
	base, extra := len(recs)/par, len(recs)%par
	start := sub*base + min(sub, extra)
	n := base
	if sub < extra {
		n++
	}
	return recs[start : start+n], nil
}
