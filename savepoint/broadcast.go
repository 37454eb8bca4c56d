package savepoint

import (
	"bytes"
	"encoding/gob"
)

// Broadcast state is stored as the root package's broadcastStore writes
// it (broadcast.go): the operator state of every subtask is a gob stream
// of a map from state name to the gob stream of that state's map[K]V.

func decodeBroadcast(data []byte) (map[string][]byte, error) {
	var all map[string][]byte
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&all); err != nil {
		return nil, err
	}
	return all, nil
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
