package file

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/weirstream/weir/connector"
)

func decodePosition(pos []byte) (int64, error) {
	v, n := binary.Varint(pos)
	if n <= 0 {
		return 0, fmt.Errorf("bad position %x", pos)
	}
	return v, nil
}

// expand turns path into the files to read, as Flink's file source: a
// file is itself; a directory is every file in it (and, recursive, in its
// subdirectories), skipping hidden names (starting with "." or "_", as
// Flink's DefaultFileFilter: a file sink's in-progress files); anything
// else is a glob pattern, which must match at least one file. Paths are
// sorted, so splits keep their names across runs.
func expand(path string, recursive bool) ([]string, error) {
	st, err := os.Stat(path)
	switch {
	case err == nil && !st.IsDir():
		return []string{path}, nil
	case err == nil:
		var out []string
		err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p == path {
				return nil
			}
			if hidden(d.Name()) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if !recursive {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0 {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing directory %s: %w", path, err)
		}
		sort.Strings(out)
		return out, nil
	}
	matches, gerr := filepath.Glob(path)
	if gerr != nil {
		return nil, fmt.Errorf("bad pattern %q: %w", path, gerr)
	}
	if len(matches) == 0 {
		if !strings.ContainsAny(path, "*?[") {
			return nil, fmt.Errorf("%s: %w", path, os.ErrNotExist)
		}
		return nil, fmt.Errorf("no file matches the pattern %q", path)
	}
	var out []string
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.IsDir() {
			sub, err := expand(m, recursive)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
			continue
		}
		out = append(out, m)
	}
	sort.Strings(out)
	return out, nil
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

// textSource reads text lines, one split per file; it resumes a file at
// the byte offset of the next line. err, if not nil, fails the job when it
// is built (connector.Validator).
type textSource struct {
	paths []string
	err   error
}

// Validate implements connector.Validator.
func (s textSource) Validate(context.Context) error { return s.err }

type fileSplit string

func (f fileSplit) SplitID() string { return string(f) }

// Splits is one split per file.
func (s textSource) Splits(int) ([]connector.Split, error) {
	out := make([]connector.Split, len(s.paths))
	for i, p := range s.paths {
		out[i] = fileSplit(p)
	}
	return out, nil
}

// Reader opens a file at its start.
func (s textSource) Reader(sp connector.Split) (connector.SplitReader[string], error) {
	return s.ReaderAt(sp, binary.AppendVarint(nil, 0))
}

// ReaderAt reopens a file at a byte offset (the start of a line).
func (s textSource) ReaderAt(sp connector.Split, pos []byte) (connector.SplitReader[string], error) {
	off, err := decodePosition(pos)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(string(sp.(fileSplit)))
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	lr := &lineReader{c: f, offset: off}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	sc.Split(lr.scanLines)
	lr.sc = sc
	return lr, nil
}

// lineReader reads lines from a scanner, counting the bytes consumed so
// its position is the offset of the next line.
type lineReader struct {
	sc     *bufio.Scanner
	c      io.Closer
	offset int64
}

func (r *lineReader) scanLines(data []byte, atEOF bool) (int, []byte, error) {
	adv, tok, err := bufio.ScanLines(data, atEOF)
	r.offset += int64(adv)
	return adv, tok, err
}

// Position implements connector.PositionedReader: the byte offset of the
// next line.
func (r *lineReader) Position() ([]byte, error) { return binary.AppendVarint(nil, r.offset), nil }

func (r *lineReader) Read(ctx context.Context, buf []connector.Record[string]) ([]connector.Record[string], error) {
	n := max(cap(buf)-len(buf), 1)
	for range n {
		if !r.sc.Scan() {
			if err := r.sc.Err(); err != nil {
				if ctx.Err() != nil {
					return buf, ctx.Err()
				}
				return buf, err
			}
			return buf, io.EOF
		}
		buf = append(buf, connector.Record[string]{Value: r.sc.Text(), TS: connector.NoTimestamp})
	}
	return buf, nil
}

func (r *lineReader) Close() error { return r.c.Close() }
