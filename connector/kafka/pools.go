package kafka

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchPools are the memory pools of one subtask reader's client
// (kgo.WithPools): the kgo.Record structs of a fetched batch come from
// them and go back once the reader has recycled every record of the
// batch (kgo.Record.Recycle), instead of a fresh slice per batch for the
// garbage collector. Safe for concurrent use: the client's fetch
// goroutines get, the reader's Fetch puts (through Recycle).
type fetchPools struct {
	recs  sync.Pool // *[]kgo.Record
	bytes sync.Pool // *[]byte
}

// GetDecompressBytes implements kgo.PoolDecompressBytes: a pooled buffer
// or none (the codec then allocates the batch's size, and that buffer is
// put back).
func (p *fetchPools) GetDecompressBytes([]byte, kgo.CompressionCodecType) []byte {
	if b, ok := p.bytes.Get().(*[]byte); ok {
		return *b
	}
	return nil
}

// PutDecompressBytes implements kgo.PoolDecompressBytes.
func (p *fetchPools) PutDecompressBytes(b []byte) { p.bytes.Put(&b) }

var _ kgo.PoolRecords = (*fetchPools)(nil)

// GetRecords implements kgo.PoolRecords. A pooled slice shorter than n
// is returned all the same: the client grows it, and the grown slice is
// the one put back, so the pool settles at the batches' size.
func (p *fetchPools) GetRecords(n int) []kgo.Record {
	if s, ok := p.recs.Get().(*[]kgo.Record); ok {
		return *s
	}
	return make([]kgo.Record, 0, n)
}

// PutRecords implements kgo.PoolRecords; the client has zeroed the
// records (Recycle).
func (p *fetchPools) PutRecords(s []kgo.Record) { p.recs.Put(&s) }
