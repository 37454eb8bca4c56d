// Package registry reads and writes Kafka records through a Confluent
// Schema Registry (or one that serves its API, such as Apicurio Registry's
// /apis/ccompat/v7): the Confluent wire format, a magic byte 0, the
// schema's id as 4 big-endian bytes, then the payload.
//
// Serializers register their schema under the topic's value subject
// (TopicNameStrategy: "<topic>-value") on first use and write the framing;
// deserializers read the id, fetch the schema from the registry once (then
// cache it) and decode. A record without the framing, with an id the
// registry does not know, or whose payload does not decode is malformed:
// the source fails the job or sends it to the dead-letter side output
// (kafka.WithDeadLetters), as for any deserializer error.
//
// It is a package of its own so that jobs that do not use a registry do
// not link the Avro library and the registry client.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/weirstream/weir/connector/kafka"
)

// requestTimeout bounds each call to the registry.
const requestTimeout = 30 * time.Second

// Registry is a Schema Registry client with a cache of the schemas it has
// registered and fetched. It is safe for concurrent use; share one between
// the serializers and deserializers of a job.
type Registry struct {
	cl *sr.Client

	mu       sync.Mutex
	byID     map[int]sr.Schema
	avro     map[int]avro.Schema
	avroRefs *avro.SchemaCache
}

// New returns a client of the registry at url (for Apicurio Registry,
// http://host:port/apis/ccompat/v7). opts are franz-go's sr options
// (basic auth, TLS, ...).
func New(url string, opts ...sr.ClientOpt) (*Registry, error) {
	cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(url)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("schema registry: %w", err)
	}
	return &Registry{cl: cl, byID: map[int]sr.Schema{}, avro: map[int]avro.Schema{}, avroRefs: &avro.SchemaCache{}}, nil
}

// Client returns the underlying franz-go registry client.
func (r *Registry) Client() *sr.Client { return r.cl }

// ValueSubject is the subject of a topic's record values under the
// TopicNameStrategy: "<topic>-value".
func ValueSubject(topic string) string { return topic + "-value" }

// ErrUnknownSchema is wrapped by the error of a record whose schema id the
// registry does not know.
var ErrUnknownSchema = errors.New("schema registry: unknown schema id")

// register registers s under subject (or finds it there) and returns its id.
func (r *Registry) register(subject string, s sr.Schema) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	ss, err := r.cl.CreateSchema(ctx, subject, s)
	if err != nil {
		return 0, fmt.Errorf("schema registry: registering the schema of subject %q: %w", subject, err)
	}
	r.mu.Lock()
	r.byID[ss.ID] = s
	r.mu.Unlock()
	return ss.ID, nil
}

// schema returns the schema with the given id, from the cache or the
// registry.
func (r *Registry) schema(id int) (sr.Schema, error) {
	r.mu.Lock()
	s, ok := r.byID[id]
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	s, err := r.cl.SchemaByID(ctx, id)
	if err != nil {
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == 404 {
			return s, fmt.Errorf("%w %d", ErrUnknownSchema, id)
		}
		return s, fmt.Errorf("schema registry: fetching schema %d: %w", id, err)
	}
	r.mu.Lock()
	r.byID[id] = s
	r.mu.Unlock()
	return s, nil
}

// avroSchema returns the parsed Avro schema with the given id.
func (r *Registry) avroSchema(id int) (avro.Schema, error) {
	r.mu.Lock()
	as, ok := r.avro[id]
	r.mu.Unlock()
	if ok {
		return as, nil
	}
	s, err := r.schema(id)
	if err != nil {
		return nil, err
	}
	if s.Type != sr.TypeAvro {
		return nil, fmt.Errorf("schema registry: schema %d is %s, not Avro", id, s.Type)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	as, err = avro.ParseWithCache(s.Schema, "", r.avroRefs)
	if err != nil {
		return nil, fmt.Errorf("schema registry: schema %d: %w", id, err)
	}
	r.avro[id] = as
	return as, nil
}

// frame appends the framing for id to a new buffer.
func frame(id int, payload []byte) ([]byte, error) {
	var h sr.ConfluentHeader
	b, err := h.AppendEncode(make([]byte, 0, 5+len(payload)), id, nil)
	if err != nil {
		return nil, err
	}
	return append(b, payload...), nil
}

// unframe splits a record value into its schema id and payload.
func unframe(v []byte) (int, []byte, error) {
	var h sr.ConfluentHeader
	id, payload, err := h.DecodeID(v)
	if err != nil {
		return 0, nil, fmt.Errorf("schema registry: not in the Confluent wire format (magic byte 0, 4-byte schema id): %w", err)
	}
	return id, payload, nil
}

// subjectID registers a schema under a subject once, on first use.
type subjectID struct {
	reg     *Registry
	subject string
	schema  sr.Schema

	mu sync.Mutex
	id int
}

func (s *subjectID) get() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.id != 0 {
		return s.id, nil
	}
	id, err := s.reg.register(s.subject, s.schema)
	if err != nil {
		return 0, err
	}
	s.id = id
	return id, nil
}

// AvroSerializer writes each value as Avro in schema (Avro's JSON
// schema text) to topic, without a key, registering schema under the
// topic's value subject on first use. Values map to the schema as
// github.com/hamba/avro/v2 maps them (struct fields by their avro tag).
func AvroSerializer[T any](reg *Registry, topic, schema string) (kafka.Serializer[T], error) {
	as, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("schema registry: the Avro schema: %w", err)
	}
	sid := &subjectID{reg: reg, subject: ValueSubject(topic), schema: sr.Schema{Schema: schema, Type: sr.TypeAvro}}
	return kafka.SerializerFunc[T](func(v T, ts int64) (*kafka.ProducerRecord, error) {
		id, err := sid.get()
		if err != nil {
			return nil, err
		}
		payload, err := avro.Marshal(as, v)
		if err != nil {
			return nil, fmt.Errorf("avro: %w", err)
		}
		b, err := frame(id, payload)
		if err != nil {
			return nil, err
		}
		return &kafka.ProducerRecord{Topic: topic, Value: b, Timestamp: ts}, nil
	}), nil
}

// AvroDeserializer decodes each record value written in the Confluent wire
// format with an Avro schema of the registry (the writer's schema, which
// the record's id names) into a T.
func AvroDeserializer[T any](reg *Registry) kafka.Deserializer[T] {
	return kafka.DeserializerFunc[T](func(rec *kafka.ConsumerRecord) (T, error) {
		var v T
		id, payload, err := unframe(rec.Value)
		if err != nil {
			return v, err
		}
		as, err := reg.avroSchema(id)
		if err != nil {
			return v, err
		}
		if err := avro.Unmarshal(as, payload, &v); err != nil {
			return v, fmt.Errorf("avro (schema %d): %w", id, err)
		}
		return v, nil
	})
}

// JSONSchemaSerializer writes each value as JSON (encoding/json) to topic,
// without a key, in the Confluent wire format, registering schema (a JSON
// Schema document) under the topic's value subject on first use. The
// value is not validated against the schema.
func JSONSchemaSerializer[T any](reg *Registry, topic, schema string) (kafka.Serializer[T], error) {
	if !json.Valid([]byte(schema)) {
		return nil, errors.New("schema registry: the JSON Schema is not valid JSON")
	}
	sid := &subjectID{reg: reg, subject: ValueSubject(topic), schema: sr.Schema{Schema: schema, Type: sr.TypeJSON}}
	return kafka.SerializerFunc[T](func(v T, ts int64) (*kafka.ProducerRecord, error) {
		id, err := sid.get()
		if err != nil {
			return nil, err
		}
		payload, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("json: %w", err)
		}
		b, err := frame(id, payload)
		if err != nil {
			return nil, err
		}
		return &kafka.ProducerRecord{Topic: topic, Value: b, Timestamp: ts}, nil
	}), nil
}

// JSONSchemaDeserializer decodes each record value written in the
// Confluent wire format with a JSON Schema of the registry into a T
// (encoding/json). The schema's id must be known to the registry; the
// value is not validated against the schema.
func JSONSchemaDeserializer[T any](reg *Registry) kafka.Deserializer[T] {
	return kafka.DeserializerFunc[T](func(rec *kafka.ConsumerRecord) (T, error) {
		var v T
		id, payload, err := unframe(rec.Value)
		if err != nil {
			return v, err
		}
		s, err := reg.schema(id)
		if err != nil {
			return v, err
		}
		if s.Type != sr.TypeJSON {
			return v, fmt.Errorf("schema registry: schema %d is %s, not JSON Schema", id, s.Type)
		}
		if err := json.Unmarshal(payload, &v); err != nil {
			return v, fmt.Errorf("json (schema %d): %w", id, err)
		}
		return v, nil
	})
}
