package savepoint

import (
	"bytes"
	"encoding/gob"
)

// Broadcast state is stored as the root package's broadcastStore writes
// it (broadcast.go): the operator state of every subtask is a gob stream
// of a map from state name to the gob stream of that state's map[K]V.

// The reserved entry broadcastSchemas (as in broadcast.go) holds the gob
// schema of each state's map, as gob of map[string]string; snapshots
// written before schemas were recorded have none.
const broadcastSchemas = "\x00weir.schemas"

func decodeBroadcast(data []byte) (all map[string][]byte, schemas map[string]string, err error) {
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&all); err != nil {
		return nil, nil, err
	}
	if sc, ok := all[broadcastSchemas]; ok {
		delete(all, broadcastSchemas)
		if err := gob.NewDecoder(bytes.NewReader(sc)).Decode(&schemas); err != nil {
			return nil, nil, err
		}
	}
	return all, schemas, nil
}

func decodeBroadcastMap[K comparable, V any](data []byte) (map[K]V, error) {
	m := map[K]V{}
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

func encodeBroadcastMap[K comparable, V any](m map[K]V) ([]byte, error) {
	var buf bytes.Buffer
	if m == nil {
		m = map[K]V{}
	}
	err := gob.NewEncoder(&buf).Encode(m)
	return buf.Bytes(), err
}

func encodeBroadcast(all map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(all)
	return buf.Bytes(), err
}
