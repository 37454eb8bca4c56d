package socket

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
)

// textSource reads the lines of a TCP connection as one split, pausing
// on clk between reconnects. err, if not nil, fails the job when it is
// built (connector.Validator).
type textSource struct {
	addr string
	opts Options
	clk  weir.Clock
	err  error
}

// Validate implements connector.Validator.
func (s textSource) Validate(context.Context) error { return s.err }

type stringSplit string

func (s stringSplit) SplitID() string { return string(s) }

// Splits is the one connection.
func (s textSource) Splits(int) ([]connector.Split, error) {
	return []connector.Split{stringSplit(s.addr)}, nil
}

// Reader connects when it first reads.
func (s textSource) Reader(connector.Split) (connector.SplitReader[string], error) {
	return &socketReader{s: s}, nil
}

type socketReader struct {
	s       textSource
	lr      *lineReader
	stop    func() bool
	retries int
}

func (r *socketReader) Read(ctx context.Context, buf []connector.Record[string]) ([]connector.Record[string], error) {
	for {
		if r.lr == nil {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", r.s.addr)
			if err != nil {
				return buf, fmt.Errorf("socket %s: %w", r.s.addr, err)
			}
			r.stop = context.AfterFunc(ctx, func() { conn.Close() })
			sc := bufio.NewScanner(conn)
			sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
			r.lr = &lineReader{sc: sc, c: conn}
		}
		out, err := r.lr.Read(ctx, buf)
		if err == nil {
			return out, nil
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		// The connection ended (EOF or error): reconnect if allowed.
		r.closeConn()
		if r.s.opts.MaxRetries == 0 || (r.s.opts.MaxRetries > 0 && r.retries >= r.s.opts.MaxRetries) {
			if errors.Is(err, io.EOF) {
				return out, io.EOF
			}
			return out, fmt.Errorf("socket %s: %w", r.s.addr, err)
		}
		r.retries++
		delay := r.s.opts.RetryDelay
		if delay <= 0 {
			delay = 500 * time.Millisecond
		}
		if len(out) > 0 {
			return out, nil
		}
		if err := sleep(ctx, r.s.clk, r.s.clk.NowMillis()+delay.Milliseconds()); err != nil {
			return out, err
		}
	}
}

func (r *socketReader) closeConn() {
	if r.lr != nil {
		if r.stop != nil {
			r.stop()
		}
		r.lr.Close()
		r.lr = nil
	}
}

func (r *socketReader) Close() error {
	r.closeConn()
	return nil
}

// sleep waits until clk reaches until (ms) or ctx is done.
func sleep(ctx context.Context, clk weir.Clock, until int64) error {
	done := make(chan struct{})
	stop := clk.AfterFunc(until, func() { close(done) })
	defer stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lineReader reads the lines of a connection, one line per Read, so that
// lines are delivered as they arrive.
type lineReader struct {
	sc *bufio.Scanner
	c  io.Closer
}

func (r *lineReader) Read(ctx context.Context, buf []connector.Record[string]) ([]connector.Record[string], error) {
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			if ctx.Err() != nil {
				return buf, ctx.Err()
			}
			return buf, err
		}
		return buf, io.EOF
	}
	return append(buf, connector.Record[string]{Value: r.sc.Text(), TS: connector.NoTimestamp}), nil
}

func (r *lineReader) Close() error { return r.c.Close() }
