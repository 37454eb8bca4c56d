package kafka_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// restartSpec is what a job process of TestKafkaRestartAfterKill needs.
type restartSpec struct{ Broker, In, Out, Dir string }

// jobProcessMain runs the job of TestKafkaRestartAfterKill in this
// process (WEIR_KAFKA_JOB holds its restartSpec): a bounded job from the
// start of In to its end, each record upper-cased (a little slowly, so
// that a run spans many checkpoints) and written exactly once to Out,
// checkpointing every 50 ms into Dir and restoring from the latest
// checkpoint there. It prints "progress" every 20 records it maps.
// A start that fails (the sink cannot abort the transactions of the
// process killed before it) exits with status 1.
func jobProcessMain() int {
	var s restartSpec
	if err := json.Unmarshal([]byte(os.Getenv("WEIR_KAFKA_JOB")), &s); err != nil {
		fmt.Fprintln(os.Stderr, "job:", err)
		return 2
	}
	store, err := weir.NewDirCheckpointStore(s.Dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "job:", err)
		return 2
	}
	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(50*time.Millisecond, weir.CheckpointStoreIn(store), weir.RestoreFromLatest(),
		weir.CheckpointTimeout(30*time.Second))
	src := weir.FromDynamicSource(env, kafka.NewSource(kafka.String(), kafka.WithBrokers(s.Broker), kafka.WithTopics(s.In),
		kafka.WithStartingOffsets(kafka.Earliest()), kafka.WithBounded(kafka.Latest())), weir.NoWatermarks[string](), "in").UID("in")
	var n atomic.Int64
	up := weir.Map(src, func(v string) string {
		time.Sleep(200 * time.Microsecond)
		if n.Add(1)%20 == 0 {
			fmt.Println("progress")
		}
		return strings.ToUpper(v)
	}).UID("upper")
	kafka.NewSink(kafka.StringValues(), kafka.WithBrokers(s.Broker), kafka.WithDefaultTopic(s.Out),
		kafka.WithDeliveryGuarantee(kafka.ExactlyOnce), kafka.WithTransactionalIDPrefix(s.Out),
		kafka.WithTransactionTimeout(time.Minute)).To(up).UID("out")
	if err := env.Execute(context.Background(), "restart-after-kill"); err != nil {
		fmt.Fprintln(os.Stderr, "job:", err)
		return 1
	}
	return 0
}

// jobProcess is a running job process of TestKafkaRestartAfterKill.
type jobProcess struct {
	cmd      *exec.Cmd
	progress chan struct{} // a value per "progress" line
	exited   chan error    // the process's end
}

func startJobProcess(t *testing.T, s restartSpec) *jobProcess {
	t.Helper()
	spec, _ := json.Marshal(s)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEIR_KAFKA_JOB="+string(spec))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &jobProcess{cmd: cmd, progress: make(chan struct{}, 1<<16), exited: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "progress" {
				select {
				case p.progress <- struct{}{}:
				default:
				}
			}
		}
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return p
}

// TestKafkaRestartAfterKill SIGKILLs a process running an exactly-once
// Kafka-to-Kafka job while it writes (its transactions open) and starts
// it again at once, 20 times (WEIR_FAULT_TRIALS, if set, instead; the
// process is killed once a transaction on the output holds records, so
// every restart finds one to abort): each start must get past the sink's abort of the killed
// process's transactions (the broker answers CONCURRENT_TRANSACTIONS
// until it has aborted them) and process records again. A last start
// runs the job to its end; a read_committed consumer then sees every
// result exactly once.
func TestKafkaRestartAfterKill(t *testing.T) {
	addr := broker(t)
	kills := 20
	if os.Getenv("WEIR_FAULT_TRIALS") != "" {
		kills = faultTrials(t)
	}
	in, out, want := boundedInput(t, addr)
	s := restartSpec{Broker: addr, In: in, Out: out, Dir: t.TempDir()}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	// waitProgress waits for k progress lines of p; it fails the test if
	// the process ends first (a start that failed).
	waitProgress := func(p *jobProcess, k int, run int) {
		for range k {
			select {
			case <-p.progress:
			case err := <-p.exited:
				t.Fatalf("start %d: the job process ended before it processed records: %v", run, err)
			case <-ctx.Done():
				t.Fatalf("start %d: no progress: %v", run, ctx.Err())
			}
		}
	}
	adm := admin(t, addr)
	// waitOpenTxn waits until a transaction on out holds records: an end
	// offset is past the last stable offset.
	waitOpenTxn := func(p *jobProcess, run int) {
		for {
			ends, err := adm.ListEndOffsets(ctx, out)
			if err != nil {
				t.Fatal(err)
			}
			stable, err := adm.ListCommittedOffsets(ctx, out)
			if err != nil {
				t.Fatal(err)
			}
			open := false
			ends.Each(func(o kadm.ListedOffset) {
				if s, _ := stable.Lookup(o.Topic, o.Partition); s.Offset < o.Offset {
					open = true
				}
			})
			if open {
				return
			}
			select {
			case err := <-p.exited:
				t.Fatalf("start %d: the job process ended before it wrote records: %v", run, err)
			case <-ctx.Done():
				t.Fatalf("start %d: no open transaction: %v", run, ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	for run := range kills {
		p := startJobProcess(t, s)
		// Kill while a transaction holds records (the case the restart's
		// abort must wait for), after a varying amount of work.
		waitProgress(p, 1+run%4, run)
		waitOpenTxn(p, run)
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.exited
	}
	p := startJobProcess(t, s)
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("the last start: %v", err)
		}
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	checkOnce(t, values(readAll(t, addr, out, true)), want)
}
