package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"
)

// Manifest describes one completed checkpoint or savepoint: the job it
// belongs to, the state of every operator by UID and subtask, and every
// data file with its size and checksum.
//
// The data files are opaque to the store. The runtime writes, per operator
// and subtask, a file with the operator (non-keyed) state and, for keyed
// operators, keyed state either as one file per key group or as one file per
// subtask holding several key groups at known offsets; KeyedState describes
// both layouts, so a restore at another parallelism can read exactly the key
// groups each new subtask owns.
type Manifest struct {
	// ID is the checkpoint id (set by Commit).
	ID int64 `json:"id"`
	// Kind says checkpoint or savepoint (set by Commit).
	Kind Kind `json:"kind"`
	// JobID identifies the job that wrote the checkpoint (free form).
	JobID string `json:"job_id,omitempty"`
	// CreatedAt is when the checkpoint was taken (Commit sets the current
	// time if it is zero).
	CreatedAt time.Time `json:"created_at"`
	// Operators holds the state of each operator, by UID.
	Operators []OperatorState `json:"operators,omitempty"`
	// Properties holds further job-level metadata (free form).
	Properties map[string]string `json:"properties,omitempty"`
	// Files lists every data file of the checkpoint (set by Commit from
	// what the Writer wrote), including files no operator entry refers to.
	Files map[string]FileInfo `json:"files"`
	// Shared lists every shared file the checkpoint references (set by
	// Commit from the Writer's WriteShared and ReuseShared calls): files
	// under <root>/shared/ that several checkpoints of one store may
	// reference, the immutable database files of incremental checkpoints.
	// Savepoints have none.
	Shared map[string]SharedFileInfo `json:"shared,omitempty"`
}

// SharedFileInfo is the recorded size and checksum of a shared file, and
// the checkpoint that uploaded it.
type SharedFileInfo struct {
	// Size is the file's length in bytes.
	Size int64 `json:"size"`
	// CRC32C is the CRC-32 (Castagnoli polynomial) of the file's contents.
	CRC32C uint32 `json:"crc32c"`
	// Checkpoint is the id of the checkpoint that uploaded the file; a
	// later checkpoint that references it did not upload it again.
	Checkpoint int64 `json:"checkpoint"`
}

// DBFiles is a subtask's keyed state kept as the files of a database (the
// Pebble state backend's incremental checkpoints) rather than as
// per-key-group snapshots: laying the files out in a directory gives back
// the database as of the checkpoint.
type DBFiles struct {
	// FirstKeyGroup and LastKeyGroup (inclusive) are the key groups the
	// database held.
	FirstKeyGroup int `json:"first_key_group"`
	LastKeyGroup  int `json:"last_key_group"`
	// KeyType names the type of the keys (informational).
	KeyType string `json:"key_type,omitempty"`
	// Files are the database's files.
	Files []DBFile `json:"files"`
}

// DBFile is one file of a database: its name in the database directory
// and where its contents are, either a data file of the checkpoint or a
// shared file.
type DBFile struct {
	// Name is the file's name in the database directory.
	Name string `json:"name"`
	// File names a data file of this checkpoint (a key of Manifest.Files).
	File string `json:"file,omitempty"`
	// Shared names a shared file (a key of Manifest.Shared).
	Shared string `json:"shared,omitempty"`
}

// UploadedBytes returns how many bytes writing the checkpoint stored: its
// data files and the shared files it uploaded itself (not those it
// references from earlier checkpoints).
func (m *Manifest) UploadedBytes() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	for _, f := range m.Shared {
		if f.Checkpoint == m.ID {
			n += f.Size
		}
	}
	return n
}

// SharedBytes returns the total size of the shared files m references.
func (m *Manifest) SharedBytes() int64 {
	var n int64
	for _, f := range m.Shared {
		n += f.Size
	}
	return n
}

// OperatorState is the state of one operator, identified by its UID.
type OperatorState struct {
	// UID is the operator's stable identifier across job versions: the
	// UID the user gave it, or one the runtime derived from the job's
	// graph.
	UID string `json:"uid"`
	// Kind is what the operator is (optional; absent before it was
	// recorded): a restore gives the state only to an operator of the same
	// kind.
	Kind string `json:"kind,omitempty"`
	// Name is the operator's name when the checkpoint was taken
	// (optional, for messages).
	Name string `json:"name,omitempty"`
	// Parallelism is the operator's parallelism when the checkpoint was
	// taken.
	Parallelism int `json:"parallelism"`
	// MaxParallelism is the number of key groups of a keyed operator
	// (0 for an operator without keyed state).
	MaxParallelism int `json:"max_parallelism,omitempty"`
	// Subtasks holds the state of each subtask that has any, by index.
	Subtasks []SubtaskState `json:"subtasks,omitempty"`
}

// SubtaskState is the state one subtask of an operator wrote. Every field
// naming a file refers to a key of Manifest.Files; an empty name means none.
type SubtaskState struct {
	// Index is the subtask index, in [0, Parallelism).
	Index int `json:"index"`
	// OperatorState names the file with the subtask's operator (non-keyed)
	// state: source positions, pending sink transactions, and so on.
	OperatorState string `json:"operator_state,omitempty"`
	// ChannelState names the file with the in-flight data of an unaligned
	// checkpoint.
	ChannelState string `json:"channel_state,omitempty"`
	// KeyedState says where the keyed state (and timers) of each key group
	// the subtask wrote lies. Key groups without state may be left out.
	KeyedState []KeyGroupSlice `json:"keyed_state,omitempty"`
	// DB holds the subtask's keyed state as database files (incremental
	// checkpoints); the KeyedState slices then hold the rest of each key
	// group's frame (timers) with an empty state snapshot.
	DB *DBFiles `json:"db,omitempty"`
}

// KeyGroupSlice locates the state of one key group: Length bytes at Offset
// in File. With one file per key group, Offset is 0 and Length the file
// size; with one file per subtask, the slices of its key groups share File.
type KeyGroupSlice struct {
	// KeyGroup is the key group, in [0, MaxParallelism).
	KeyGroup int `json:"key_group"`
	// File names the data file.
	File string `json:"file"`
	// Offset is the first byte of the key group's state in File.
	Offset int64 `json:"offset"`
	// Length is the number of bytes of the key group's state.
	Length int64 `json:"length"`
}

// Of returns the key group's bytes within data, the contents of s.File.
func (s KeyGroupSlice) Of(data []byte) ([]byte, error) {
	if s.Offset < 0 || s.Length < 0 || s.Offset > int64(len(data)) || s.Length > int64(len(data))-s.Offset {
		return nil, fmt.Errorf("%w: key group %d at [%d, +%d) lies outside %q (%d bytes)",
			ErrCorrupt, s.KeyGroup, s.Offset, s.Length, s.File, len(data))
	}
	return data[s.Offset : s.Offset+s.Length], nil
}

// FileInfo is the recorded size and checksum of a data file.
type FileInfo struct {
	// Size is the file's length in bytes.
	Size int64 `json:"size"`
	// CRC32C is the CRC-32 (Castagnoli polynomial) of the file's contents.
	CRC32C uint32 `json:"crc32c"`
}

// Operator returns the state of the operator with the given UID, or nil.
func (m *Manifest) Operator(uid string) *OperatorState {
	for i := range m.Operators {
		if m.Operators[i].UID == uid {
			return &m.Operators[i]
		}
	}
	return nil
}

// KeyGroup returns where the state of key group kg lies, whichever subtask
// wrote it, and false if no subtask wrote state for kg.
func (o *OperatorState) KeyGroup(kg int) (KeyGroupSlice, bool) {
	for _, st := range o.Subtasks {
		for _, s := range st.KeyedState {
			if s.KeyGroup == kg {
				return s, true
			}
		}
	}
	return KeyGroupSlice{}, false
}

// Limits of a manifest.
const (
	// MaxNameLen is the longest valid data file name, in bytes.
	MaxNameLen = 200
	// MaxKeyGroups is the largest max parallelism (Flink's limit, 2^15).
	MaxKeyGroups = 1 << 15
)

// manifestName is the manifest's file name in a checkpoint directory; data
// file names can never take it (they may not start with '_').
const manifestName = "_manifest.json"

// CheckName returns an error unless name is a valid data file name: 1 to
// MaxNameLen bytes of ASCII letters, digits, '.', '_' and '-', not starting
// with '.' or '_' (reserved for the store).
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("checkpoint store: invalid file name %q: length must be 1 to %d bytes", name, MaxNameLen)
	}
	if name[0] == '.' || name[0] == '_' {
		return fmt.Errorf("checkpoint store: invalid file name %q: must not start with '.' or '_'", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("checkpoint store: invalid file name %q: byte %q is not a letter, digit, '.', '_' or '-'", name, c)
		}
	}
	return nil
}

// Validate checks that m is consistent: a valid kind and id, valid file
// names, operators with distinct non-empty UIDs, subtask indexes in [0,
// Parallelism) and distinct, every referenced file listed in Files, key
// groups in [0, MaxParallelism) and written once per operator, and every
// key-group slice inside its file.
func (m *Manifest) Validate() error {
	if !m.Kind.valid() {
		return fmt.Errorf("checkpoint store: manifest: invalid kind %d", uint8(m.Kind))
	}
	if m.ID < 0 {
		return fmt.Errorf("checkpoint store: manifest: negative id %d", m.ID)
	}
	for name, fi := range m.Files {
		if err := CheckName(name); err != nil {
			return fmt.Errorf("checkpoint store: manifest: %s", strings.TrimPrefix(err.Error(), "checkpoint store: "))
		}
		if fi.Size < 0 {
			return fmt.Errorf("checkpoint store: manifest: file %q has negative size %d", name, fi.Size)
		}
	}
	if len(m.Shared) > 0 && m.Kind == Savepoint {
		return errors.New("checkpoint store: manifest: a savepoint must be self-contained but references shared files")
	}
	for name, fi := range m.Shared {
		if err := CheckName(name); err != nil {
			return fmt.Errorf("checkpoint store: manifest: shared %s", strings.TrimPrefix(err.Error(), "checkpoint store: "))
		}
		if fi.Size < 0 {
			return fmt.Errorf("checkpoint store: manifest: shared file %q has negative size %d", name, fi.Size)
		}
		if fi.Checkpoint < 0 || fi.Checkpoint > m.ID {
			return fmt.Errorf("checkpoint store: manifest: shared file %q was uploaded by checkpoint %d, not before checkpoint %d", name, fi.Checkpoint, m.ID)
		}
	}
	uids := make(map[string]bool, len(m.Operators))
	for _, op := range m.Operators {
		if err := m.validateOperator(&op, uids); err != nil {
			return fmt.Errorf("checkpoint store: manifest: operator %q: %w", op.UID, err)
		}
	}
	return nil
}

func (m *Manifest) validateOperator(op *OperatorState, uids map[string]bool) error {
	if op.UID == "" {
		return errors.New("empty uid")
	}
	if uids[op.UID] {
		return errors.New("uid appears twice")
	}
	uids[op.UID] = true
	if op.Parallelism < 1 {
		return fmt.Errorf("parallelism %d < 1", op.Parallelism)
	}
	if op.MaxParallelism < 0 || op.MaxParallelism > MaxKeyGroups {
		return fmt.Errorf("max parallelism %d not in [0, %d]", op.MaxParallelism, MaxKeyGroups)
	}
	indexes := make(map[int]bool, len(op.Subtasks))
	keyGroups := make(map[int]bool)
	for _, st := range op.Subtasks {
		if st.Index < 0 || st.Index >= op.Parallelism {
			return fmt.Errorf("subtask index %d not in [0, %d)", st.Index, op.Parallelism)
		}
		if indexes[st.Index] {
			return fmt.Errorf("subtask %d appears twice", st.Index)
		}
		indexes[st.Index] = true
		for _, f := range []string{st.OperatorState, st.ChannelState} {
			if _, ok := m.Files[f]; f != "" && !ok {
				return fmt.Errorf("subtask %d: file %q was not written", st.Index, f)
			}
		}
		for _, s := range st.KeyedState {
			if s.KeyGroup < 0 || s.KeyGroup >= op.MaxParallelism {
				return fmt.Errorf("subtask %d: key group %d not in [0, max parallelism %d)", st.Index, s.KeyGroup, op.MaxParallelism)
			}
			if keyGroups[s.KeyGroup] {
				return fmt.Errorf("subtask %d: key group %d written twice", st.Index, s.KeyGroup)
			}
			keyGroups[s.KeyGroup] = true
			fi, ok := m.Files[s.File]
			if !ok {
				return fmt.Errorf("subtask %d: key group %d: file %q was not written", st.Index, s.KeyGroup, s.File)
			}
			if s.Offset < 0 || s.Length < 0 || s.Offset > fi.Size || s.Length > fi.Size-s.Offset {
				return fmt.Errorf("subtask %d: key group %d: [%d, +%d) lies outside %q (%d bytes)",
					st.Index, s.KeyGroup, s.Offset, s.Length, s.File, fi.Size)
			}
		}
		if st.DB != nil {
			if err := m.validateDB(op, st.DB); err != nil {
				return fmt.Errorf("subtask %d: database files: %w", st.Index, err)
			}
		}
	}
	return nil
}

func (m *Manifest) validateDB(op *OperatorState, db *DBFiles) error {
	if db.FirstKeyGroup < 0 || db.LastKeyGroup < db.FirstKeyGroup || db.LastKeyGroup >= op.MaxParallelism {
		return fmt.Errorf("key groups [%d, %d] not within [0, max parallelism %d)", db.FirstKeyGroup, db.LastKeyGroup, op.MaxParallelism)
	}
	names := make(map[string]bool, len(db.Files))
	for _, f := range db.Files {
		if err := CheckName(f.Name); err != nil {
			return errors.New(strings.TrimPrefix(err.Error(), "checkpoint store: "))
		}
		if names[f.Name] {
			return fmt.Errorf("file %q appears twice", f.Name)
		}
		names[f.Name] = true
		switch {
		case (f.File == "") == (f.Shared == ""):
			return fmt.Errorf("file %q must name exactly one of a data file and a shared file", f.Name)
		case f.File != "":
			if _, ok := m.Files[f.File]; !ok {
				return fmt.Errorf("file %q: data file %q was not written", f.Name, f.File)
			}
		default:
			if _, ok := m.Shared[f.Shared]; !ok {
				return fmt.Errorf("file %q: shared file %q is not listed in shared", f.Name, f.Shared)
			}
		}
	}
	return nil
}

// usesShared reports whether m needs format version 2: shared files or
// database files, which a version-1 reader would silently ignore.
func (m *Manifest) usesShared() bool {
	if len(m.Shared) > 0 {
		return true
	}
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			if st.DB != nil {
				return true
			}
		}
	}
	return false
}

// The manifest file is a JSON envelope (see FORMAT.md):
//
//	{"format": "weir-checkpoint", "version": 1, "crc32c": N, "manifest": {...}}
//
// where N is the CRC32C of the bytes of the "manifest" value exactly as they
// appear in the file.
//
// Version 2 adds shared files and database files (incremental
// checkpoints), which a version-1 reader would ignore and so misread; a
// manifest without them is still written as version 1.
const (
	formatName    = "weir-checkpoint"
	formatVersion = 2
)

type envelope struct {
	Format   string          `json:"format"`
	Version  int             `json:"version"`
	CRC32C   *uint32         `json:"crc32c"`
	Manifest json.RawMessage `json:"manifest"`
}

func checksum(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// encodeManifest returns the manifest file's bytes.
func encodeManifest(m *Manifest) ([]byte, error) {
	body, err := json.MarshalIndent(m, "  ", "  ")
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: encoding manifest: %w", err)
	}
	var b bytes.Buffer
	b.WriteString("{\n  \"format\": \"" + formatName + "\",\n")
	version := 1
	if m.usesShared() {
		version = formatVersion
	}
	b.WriteString("  \"version\": " + strconv.Itoa(version) + ",\n")
	b.WriteString("  \"crc32c\": " + strconv.FormatUint(uint64(checksum(body)), 10) + ",\n")
	b.WriteString("  \"manifest\": ")
	b.Write(body)
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}

// decodeManifest parses a manifest file, checks its checksum and validates
// it. Every failure wraps ErrCorrupt and names loc, the checkpoint's
// location.
func decodeManifest(data []byte, loc string) (*Manifest, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("%w: %s: manifest (%d bytes) is not valid JSON (truncated?): %v", ErrCorrupt, loc, len(data), err)
	}
	if env.Format != formatName {
		return nil, fmt.Errorf("%w: %s: manifest format is %q, want %q", ErrCorrupt, loc, env.Format, formatName)
	}
	if env.Version < 1 || env.Version > formatVersion {
		return nil, fmt.Errorf("%w: %s: manifest format version %d is not supported (this build reads versions 1 to %d)", ErrCorrupt, loc, env.Version, formatVersion)
	}
	if env.CRC32C == nil || env.Manifest == nil {
		return nil, fmt.Errorf("%w: %s: manifest lacks its crc32c or manifest field", ErrCorrupt, loc)
	}
	if got := checksum(env.Manifest); got != *env.CRC32C {
		return nil, fmt.Errorf("%w: %s: manifest checksum mismatch: crc32c of its contents is %d, recorded %d", ErrCorrupt, loc, got, *env.CRC32C)
	}
	m := new(Manifest)
	if err := json.Unmarshal(env.Manifest, m); err != nil {
		return nil, fmt.Errorf("%w: %s: manifest: %v", ErrCorrupt, loc, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, loc, strings.TrimPrefix(err.Error(), "checkpoint store: "))
	}
	return m, nil
}
