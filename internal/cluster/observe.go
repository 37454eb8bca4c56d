package cluster

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/engine"
)

// inputPositions returns the positions of a task's inputs in the
// snapshots of one checkpoint: the Kafka sources' (their encoded splits
// and positions) and the repartition readers'.
func (m *member) inputPositions(t taskRef, acks []engine.TaskAck) []engine.PartitionOffset {
	sources := map[string]engine.ClusterSource{}
	for _, n := range t.st.nodes {
		if cs, ok := n.Connector.(engine.ClusterSource); ok && n.Kind == engine.KindSource {
			sources[engine.UIDOf(n)] = cs
		}
	}
	var out []engine.PartitionOffset
	for _, a := range acks {
		for _, op := range a.Ops {
			if topic, ok := strings.CutPrefix(op.UID, remoteInUID); ok {
				if next, err := engine.DecodeRemoteReaderOffset(op.State); err == nil {
					out = append(out, engine.PartitionOffset{Topic: topic, Partition: int32(t.index), Offset: next})
				}
				continue
			}
			cs := sources[op.UID]
			if cs == nil || len(op.State) == 0 {
				continue
			}
			splits, pos, err := engine.DecodeSourceState(op.State)
			if err != nil {
				continue
			}
			if offs, err := cs.SplitOffsets(splits, pos); err == nil {
				for topic, parts := range offs {
					for p, off := range parts {
						out = append(out, engine.PartitionOffset{Topic: topic, Partition: p, Offset: off})
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	// Two sources of one topic in a task: keep the smaller position.
	return slices.CompactFunc(out, func(a, b engine.PartitionOffset) bool {
		return a.Topic == b.Topic && a.Partition == b.Partition
	})
}

// remoteInUID prefixes the UID of a repartition topic's reader.
const remoteInUID = "cluster-in-"

// maxPointerMetadata bounds the pointer's metadata below the brokers'
// offset.metadata.max.bytes (4096 by default); positions that do not fit
// are left out (status then shows no lag for the task).
const maxPointerMetadata = 3500

// pointerMetadata is the metadata of a task's committed checkpoint
// pointer: "weir checkpoint ID task TASK in TOPIC:P=NEXT,...".
func pointerMetadata(id int64, task string, in []engine.PartitionOffset) string {
	meta := "weir checkpoint " + strconv.FormatInt(id, 10) + " task " + task
	if len(in) == 0 {
		return meta
	}
	var b strings.Builder
	b.WriteString(meta)
	b.WriteString(" in ")
	for i, p := range in {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d=%d", p.Topic, p.Partition, p.Offset)
	}
	if b.Len() > maxPointerMetadata {
		return meta
	}
	return b.String()
}

// parsePointerMetadata returns the task and input positions of a
// pointer's metadata (ok false: not a Weir pointer).
func parsePointerMetadata(meta string) (task string, in []engine.PartitionOffset, ok bool) {
	_, rest, ok := strings.Cut(meta, " task ")
	if !ok {
		return "", nil, false
	}
	task, list, _ := strings.Cut(rest, " in ")
	for _, item := range strings.Split(list, ",") {
		tp, off, ok1 := strings.Cut(item, "=")
		i := strings.LastIndexByte(tp, ':')
		if !ok1 || i < 0 {
			continue
		}
		p, err1 := strconv.ParseInt(tp[i+1:], 10, 32)
		o, err2 := strconv.ParseInt(off, 10, 64)
		if err1 == nil && err2 == nil {
			in = append(in, engine.PartitionOffset{Topic: tp[:i], Partition: int32(p), Offset: o})
		}
	}
	return task, in, true
}
