package textio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/runtime"
)

// SocketOptions configures a socket text source.
type SocketOptions struct {
	// MaxRetries is how often to reconnect after the connection closes:
	// 0 (default) ends the stream when the server closes the connection; -1
	// retries forever.
	MaxRetries int
	// RetryDelay is the pause before a reconnect (default 500 ms).
	RetryDelay time.Duration
}

// NewSocketSource reads from addr ("host:port"), pausing on clk between
// reconnects.
func NewSocketSource(addr string, opts SocketOptions, clk clock.Clock) SocketSource {
	return SocketSource{addr: addr, opts: opts, clk: clk}
}

// SocketSource reads the lines of a TCP connection as one split.
type SocketSource struct {
	addr string
	opts SocketOptions
	clk  clock.Clock
}

// Splits is the one connection.
func (s SocketSource) Splits(int) ([]runtime.Split, error) {
	return []runtime.Split{stringSplit(s.addr)}, nil
}

// Reader connects when it first reads.
func (s SocketSource) Reader(runtime.Split) (runtime.SplitReader[string], error) {
	return &socketReader{s: s}, nil
}

type socketReader struct {
	s       SocketSource
	lr      *lineReader
	stop    func() bool
	retries int
}

func (r *socketReader) Read(ctx context.Context, buf []runtime.Record[string]) ([]runtime.Record[string], error) {
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
		if err := clock.Sleep(ctx, r.s.clk, r.s.clk.NowMillis()+delay.Milliseconds()); err != nil {
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
