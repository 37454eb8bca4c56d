// Package socket reads newline-delimited text from a TCP server, as
// Flink's socketTextStream.
package socket

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/weirstream/weir"
)

// Options configures TextStream: MaxRetries is how often to reconnect
// after the server closes the connection (0, the default, ends the stream
// then; -1 retries forever), RetryDelay the pause before a reconnect
// (default 500 ms, on the job's clock).
type Options struct {
	// MaxRetries is how often to reconnect after the server closes the
	// connection: 0 (default) ends the stream then; -1 retries forever.
	MaxRetries int
	// RetryDelay is the pause before a reconnect (default 500 ms).
	RetryDelay time.Duration
}

// TextStream reads newline-delimited text ("\n" or "\r\n") from a TCP
// server at host:port, at parallelism 1, without timestamps. The
// connection is opened when the job starts; a failure to connect fails
// the job naming the address. When the server closes the connection the
// stream ends, unless opts.MaxRetries allows reconnecting. The source
// cannot resume from a checkpoint (a socket cannot be replayed), as in
// Flink.
func TextStream(env *weir.Environment, host string, port int, opts Options) weir.DataStream[string] {
	var err error
	if port < 0 || port > 65535 {
		err = fmt.Errorf("source %q: invalid port %d", "SocketTextStream", port)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	src := textSource{addr: addr, opts: opts, clk: env.Clock(), err: err}
	return weir.FromSource[string](env, src, weir.NoWatermarks[string](), "SocketTextStream").SetParallelism(1)
}
