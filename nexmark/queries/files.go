package queries

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/nexmark"
)

// Q10Row is a bid as q10 logs it, with its partition columns.
type Q10Row struct {
	Auction  int64
	Bidder   int64
	Price    int64
	DateTime int64
	Extra    string
	// Partition is "dt=yyyy-MM-dd/hm=HH:mm" of DateTime (UTC), the
	// directory the row is written to; DT and HM are its two values.
	Partition string
	DT, HM    string
}

// Q10 logs every bid to the file system, partitioned by day and minute of
// its event time, with Weir's exactly-once file sink:
//
//	INSERT INTO nexmark_q10 /* filesystem, csv, PARTITIONED BY (dt, hm) */
//	SELECT auction, bidder, price, dateTime, extra,
//	  DATE_FORMAT(dateTime, 'yyyy-MM-dd'), DATE_FORMAT(dateTime, 'HH:mm') FROM bid
//
// A row goes to dir/dt=<day>/hm=<minute>/ as the CSV line
// "auction,bidder,price,yyyy-MM-dd HH:mm:ss.SSS,extra" (the partition
// columns are in the path, as Flink's file system sink writes them). Part
// files appear under their final names when the checkpoint covering them
// completes, or when a bounded job ends (connector/file's Sink).
func Q10(events weir.DataStream[nexmark.Event], dir string) weir.Sink {
	rows := weir.ProcessStream(weir.Filter(events, isBid).Name("Bids"), &q10Rows{}).Name("Q10 partition")
	return file.Sink(rows, dir, Q10Line, file.Buckets(func(r Q10Row, _ int64) string { return r.Partition })).UID("q10-files")
}

// q10Rows derives the partition columns; a subtask keeps the strings of the
// minute it saw last (bids come in time order per generator), so most rows
// cost no formatting.
type q10Rows struct {
	minute    int64 // ms of the cached minute's start; -1 before
	partition string
}

func (q *q10Rows) Open(weir.RuntimeContext) error { q.minute = -1; return nil }

func (q *q10Rows) ProcessElement(e nexmark.Event, _ weir.Context, out weir.Collector[Q10Row]) error {
	b := e.Bid
	if m := b.DateTime - b.DateTime%60_000; m != q.minute {
		q.minute = m
		q.partition = time.UnixMilli(m).UTC().Format("dt=2006-01-02/hm=15:04")
	}
	p := q.partition
	out.Collect(Q10Row{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Extra: b.Extra,
		Partition: p, DT: p[3:13], HM: p[17:22]})
	return nil
}

// Q10Line formats a q10 row as its CSV line (without the newline).
func Q10Line(r Q10Row) []byte {
	b := make([]byte, 0, 64+len(r.Extra))
	b = strconv.AppendInt(b, r.Auction, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.Bidder, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.Price, 10)
	b = append(b, ',')
	b = append(b, r.DT...)
	b = append(b, ' ')
	b = append(b, r.HM...)
	ms := r.DateTime % 60_000
	b = append(b, ':', byte('0'+ms/10_000), byte('0'+ms/1000%10), '.', byte('0'+ms/100%10), byte('0'+ms/10%10), byte('0'+ms%10), ',')
	return append(b, r.Extra...)
}

// Q13Result is a bid with the side-input value of its auction.
type Q13Result struct {
	Auction  int64
	Bidder   int64
	Price    int64
	DateTime int64
	Value    string
}

// Q13 is a bounded side-input join: each bid joined with the row of a
// static table (read from a file of "key,value" lines) whose key is the
// bid's auction id mod 10,000:
//
//	SELECT B.auction, B.bidder, B.price, B.dateTime, S.value
//	FROM (SELECT *, PROCTIME() AS p_time FROM bid) B
//	JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S ON mod(B.auction, 10000) = S.key
//
// As Flink's lookup join on a file system table (which caches the whole
// file), each subtask reads the file when it opens and looks every bid up
// in memory; bids without a row are dropped (an inner join).
func Q13(events weir.DataStream[nexmark.Event], sideInput string) weir.DataStream[Q13Result] {
	return weir.ProcessStream(weir.Filter(events, isBid).Name("Bids"), &sideInputJoin{path: sideInput}).Name("Q13 join")
}

type sideInputJoin struct {
	path  string
	table map[int64]string
}

func (j *sideInputJoin) Open(weir.RuntimeContext) (err error) {
	j.table, err = ReadSideInput(j.path)
	return err
}

func (j *sideInputJoin) ProcessElement(e nexmark.Event, _ weir.Context, out weir.Collector[Q13Result]) error {
	b := e.Bid
	if v, ok := j.table[b.Auction%10_000]; ok {
		out.Collect(Q13Result{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Value: v})
	}
	return nil
}

// SideInputRows is the size of Nexmark's side input (side_input_gen.sh).
const SideInputRows = 10_000

// WriteSideInput writes Nexmark's side input to path: the lines "i,i" for
// i from 0 to rows-1 (SideInputGenerator).
func WriteSideInput(path string, rows int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i := range rows {
		fmt.Fprintf(w, "%d,%d\n", i, i)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadSideInput reads a side-input file of "key,value" lines (key an
// integer; the value is the rest of the line).
func ReadSideInput(path string) (map[int64]string, error) {
	if path == "" {
		return nil, fmt.Errorf("q13: no side input file given")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("q13: side input: %w", err)
	}
	table := map[int64]string{}
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		k, v, ok := strings.Cut(line, ",")
		key, err := strconv.ParseInt(k, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("q13: side input %s line %d: want key,value, got %q", path, i+1, line)
		}
		table[key] = v
	}
	return table, nil
}

// CommittedRows counts the lines of the committed part files under dir (in
// any partition directory; names starting with "." are in progress or
// pending and skipped).
func CommittedRows(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		data, err := os.ReadFile(path)
		n += int64(bytes.Count(data, []byte{'\n'}))
		return err
	})
	return n, err
}
