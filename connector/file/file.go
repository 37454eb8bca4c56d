// Package file reads text files and writes part files exactly once: the
// file source and sink of Weir, as Flink's FileSource (text lines) and
// FileSink.
package file

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/weirstream/weir"
)

// Option configures ReadTextFile.
type Option func(*options)

type options struct{ recursive bool }

// Recursive makes a directory's subdirectories read too (Flink's
// nested file enumeration).
func Recursive() Option { return func(o *options) { o.recursive = true } }

// ReadTextFile reads the lines of text files, one split per file, without
// timestamps (give them with weir.AssignTimestampsAndWatermarks). path is
// a file; a directory, whose files are all read (with Recursive, those of
// its subdirectories too; names starting with "." or "_" are skipped, as
// Flink's file source does); or a glob pattern ("logs/*.txt"). A path
// that does not exist, or a pattern that matches nothing, fails the job
// when it is built, naming it; a file that cannot be read fails the job
// with its name. A checkpoint records each file's byte offset.
func ReadTextFile(env *weir.Environment, path string, opts ...Option) weir.DataStream[string] {
	var o options
	for _, f := range opts {
		f(&o)
	}
	paths, err := expand(path, o.recursive)
	if err != nil {
		err = fmt.Errorf("source %q: %w", "TextFile", err)
	}
	return weir.FromSource[string](env, textSource{paths: paths, err: err}, weir.NoWatermarks[string](), "TextFile")
}

// SinkOption configures Sink.
type SinkOption[T any] func(*sinkOptions[T])

type sinkOptions[T any] struct{ bucket func(v T, ts int64) string }

// Buckets assigns each record to a bucket, a directory under the sink's
// directory given by a relative, slash-separated path (such as
// "dt=2015-07-15/hm=00:05"), as Flink's BucketAssigner and the partitions
// of its file system SQL sink: each transaction writes one part file per
// bucket it received records for, and they are committed together. ts is
// the record's timestamp. A bucket that is not a local relative path
// (absolute, or leaving the directory with "..") fails the job, naming it.
func Buckets[T any](bucket func(v T, ts int64) string) SinkOption[T] {
	return func(o *sinkOptions[T]) { o.bucket = bucket }
}

// Sink writes each record of ds as a line (format's bytes plus a newline)
// to part files in dir (or in bucket directories under it, Buckets),
// exactly once: a part file appears under its final name
// ("part-<subtask>-<n>") only when the checkpoint covering it has
// completed (or the bounded job ended); until then it is ".inprogress-" or
// ".pending-" and its name. Files of failed attempts are removed or
// overwritten. Give the sink a UID (.UID("...")): its pending
// transactions are state.
func Sink[T any](ds weir.DataStream[T], dir string, format func(T) []byte, opts ...SinkOption[T]) weir.Sink {
	var o sinkOptions[T]
	for _, f := range opts {
		f(&o)
	}
	var err error
	if format == nil {
		err = errors.New("sink \"FileSink\": the format function is nil")
	} else if merr := os.MkdirAll(dir, 0o755); merr != nil {
		err = fmt.Errorf("sink %q: %w", "FileSink", merr)
	}
	return weir.AddTwoPhaseCommitSink[T, *Txn](ds, checkedSink[T]{newPartSink(dir, format, o.bucket), err}).Name("FileSink")
}

type checkedSink[T any] struct {
	*partSink[T]
	err error
}

func (c checkedSink[T]) Validate(context.Context) error { return c.err }
