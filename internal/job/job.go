// Package job is the engine below the root package's Environment and
// JobHandle: it checks a job's graph, finds what the job starts from and
// checks that restore against the job, builds the physical plans, runs
// them and restarts them after a failure from the latest completed
// checkpoint (failover), assembles and stores checkpoints and savepoints,
// and keeps the job's identity and failures for the monitor. The root
// package keeps the job author's API and converts its types at the
// boundary.
package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/checkpoint/durable"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/state"
)

// CheckpointHistory is the number of checkpoints whose statistics are
// kept (Flink's web.checkpoints.history).
const CheckpointHistory = 10

// Config is what the engine reads of a job's settings.
type Config struct {
	Parallelism, MaxParallelism int
	BatchSize, Credits          int
	Chaining                    bool
	WMInterval                  time.Duration
	KeySample                   int
	Clock                       clock.Clock
	// Logger is the environment's logger.
	Logger *slog.Logger
	// Restart returns the delay before restart number attempt, or false
	// to give up; nil: the job does not restart. RestartName names the
	// strategy ("none" without one).
	Restart     func(attempt int) (time.Duration, bool)
	RestartName string
	// StateBackend names the keyed state backend.
	StateBackend string
	// Savepoint is the savepoint the job restores from (nil: none).
	Savepoint *Restore
	// Remotes returns the openers of the job's storages.
	Remotes func() (store.Remotes, error)
	// Checkpoint is the checkpointing setting (nil: none).
	Checkpoint *Checkpointing
}

// Restore is a savepoint to restore from.
type Restore struct {
	Path             string
	AllowNonRestored bool
}

// Checkpointing holds the checkpoint settings.
type Checkpointing struct {
	Interval, Timeout, MinPause, AlignedTimeout time.Duration
	ExactlyOnce, Unaligned                      bool
	Retain, Tolerable                           int
	// Restore: RestoreFromLatest; AllowNonRestored with it.
	Restore, AllowNonRestored bool
	// Store keeps the completed checkpoints; StoreName names its type.
	Store     Store
	StoreName string
	// SavepointDir is the default savepoint target; Storage the checkpoint
	// storage's location ("" if the store was given as a value).
	SavepointDir, Storage string
}

// Store keeps completed checkpoints (weir.CheckpointStore on the
// engine's types; a *durable.Store is one).
type Store interface {
	Save(ctx context.Context, cp *durable.Checkpoint) error
	Latest(ctx context.Context) (*durable.Checkpoint, error)
	Retain(ctx context.Context, n int) error
}

// Dropper is implemented by a Store that is told which operators' state
// a restore from a checkpoint it returned dropped (AllowNonRestoredState).
type Dropper interface {
	Dropped(cp *durable.Checkpoint, uids []string)
}

// Runner runs one job: the state an Environment keeps across its job's
// attempts.
type Runner struct {
	// Cfg and Nodes are set when the job is checked.
	Cfg   Config
	Nodes []*engine.Node
	// Log is the job's logger once it runs (its entries name the job).
	Log *slog.Logger

	// Savepoints carries savepoint requests to the running attempt's
	// checkpoint coordinator.
	Savepoints chan *engine.SavepointRequest
	// Stats tracks the checkpoints' statistics across attempts, Mon the
	// job's identity and failures.
	Stats *engine.CheckpointStats
	Mon   Monitor
	// Staged holds the staged checkpoints of operators that ended while
	// the coordinator could still store them; each attempt discards them
	// when it has ended.
	Staged durable.StagedSet

	// base is the checkpoint or savepoint the job started from (nil:
	// none) and firstID the id after which its checkpoints are numbered: a
	// failover restores from the latest checkpoint numbered after firstID,
	// else from base.
	base     *durable.Checkpoint
	firstID  int64
	numbered bool // firstID is set

	mu            sync.Mutex
	cancelAttempt context.CancelCauseFunc // the running attempt's
}

// NewRunner returns the runner of a job not built yet.
func NewRunner() *Runner {
	return &Runner{Savepoints: make(chan *engine.SavepointRequest), Stats: engine.NewCheckpointStats(CheckpointHistory)}
}

// Logger returns the job's logger once it runs, else the environment's.
func (r *Runner) Logger() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return r.Cfg.Logger
}

// owns reports whether n is an operator of the job.
func (r *Runner) owns(n *engine.Node) bool {
	return n.ID >= 1 && n.ID <= len(r.Nodes) && r.Nodes[n.ID-1] == n
}

// Check checks the job's graph nodes: its shape (CheckShape), its
// operators' ids (with chaining or not), and the validators of its
// sources' and sinks' settings.
func (r *Runner) Check(ctx context.Context, nodes []*engine.Node, chaining bool, validators []func(context.Context) error) error {
	r.Nodes = nodes
	if err := r.CheckShape(); err != nil {
		return fmt.Errorf("weir: invalid job: %w", err)
	}
	if err := engine.AssignIDs(nodes, chaining); err != nil {
		return fmt.Errorf("weir: invalid job: %w", err)
	}
	var verrs []error
	for _, v := range validators {
		if err := v(ctx); err != nil {
			verrs = append(verrs, err)
		}
	}
	if err := errors.Join(verrs...); err != nil {
		return fmt.Errorf("weir: invalid job: %w", err)
	}
	return nil
}

// CheckShape refuses jobs Flink refuses: one that reads a stream of
// another environment (a union, connect or join of streams of two
// environments), and one without a sink (its output would go nowhere;
// Flink's DataSet API refused such a program, its DataStream API an empty
// one).
func (r *Runner) CheckShape() error {
	sink := false
	for _, n := range r.Nodes {
		sink = sink || n.Sink
		for _, in := range n.Inputs {
			if !r.owns(in.From) {
				return fmt.Errorf("operator %q reads the stream of %q, which belongs to another environment; streams of two environments cannot be combined (build the whole job on one Environment)", n.Name, in.From.Name)
			}
		}
	}
	if !sink {
		return fmt.Errorf("the job has no sink, so what its operators compute goes nowhere; end its streams in sinks (weir.Print, weir.SinkFunc, weir.Collect, weir.FileSink, weir.Discard, ...)")
	}
	return nil
}

// StartingPoint returns what the job starts from: the savepoint of
// RestoreFromSavepoint, or with RestoreFromLatest the latest checkpoint if
// it is newer (a restarted process resumes from its own checkpoints), or
// nothing. A restore is checked against the job: every operator state must
// map to an operator UID of the job (unless AllowNonRestoredState) and the
// max parallelism must be the same.
func (r *Runner) StartingPoint(ctx context.Context) (*durable.Checkpoint, error) {
	var (
		cp    *durable.Checkpoint
		what  string
		allow bool
	)
	if sr := r.Cfg.Savepoint; sr != nil {
		rm, err := r.Cfg.Remotes()
		if err != nil {
			return nil, err
		}
		sp, err := durable.ReadSavepoint(ctx, sr.Path, rm, "weir.WithStorage", r.Logger())
		if err != nil {
			return nil, fmt.Errorf("weir: restoring from savepoint: %w", err)
		}
		cp, what, allow = sp, "savepoint "+sr.Path, sr.AllowNonRestored
	}
	c := r.Cfg.Checkpoint
	if c != nil && c.Restore {
		latest, err := c.Store.Latest(ctx)
		if err != nil {
			return nil, fmt.Errorf("weir: reading the latest checkpoint: %w", err)
		}
		if latest != nil && (cp == nil || latest.ID > cp.ID) {
			cp, what, allow = latest, fmt.Sprintf("checkpoint %d", latest.ID), c.AllowNonRestored
		}
	}
	if cp == nil {
		return nil, nil
	}
	if err := r.checkRestore(cp, what, allow); err != nil {
		return nil, err
	}
	r.Logger().Info("restoring", "from", what, "checkpoint", cp.ID)
	r.Stats.Restored(engine.RestoredCheckpoint{ID: cp.ID, Timestamp: time.Now().UnixMilli(), Savepoint: r.Cfg.Savepoint != nil && what != fmt.Sprintf("checkpoint %d", cp.ID), ExternalPath: what})
	r.base = cp
	return cp, nil
}

// checkRestore checks that cp fits the job: the same max parallelism, and
// every operator state it holds claimed by an operator of the job with the
// same id and kind (unless allow: then the rest is dropped, with a
// warning).
func (r *Runner) checkRestore(cp *durable.Checkpoint, what string, allow bool) error {
	maxPar := r.Cfg.MaxParallelism
	if cp.MaxParallelism != 0 && cp.MaxParallelism != maxPar {
		return fmt.Errorf("weir: cannot restore from %s: it was taken with max parallelism %d and the job has %d; keyed state is split into max-parallelism key groups, which cannot be remapped (set weir.WithMaxParallelism(%d))",
			what, cp.MaxParallelism, maxPar, cp.MaxParallelism)
	}
	byID := map[string]*engine.Node{}
	for _, n := range r.Nodes {
		byID[engine.UIDOf(n)] = n
	}
	ids := make([]string, 0, len(cp.Operators))
	for id := range cp.Operators {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var unclaimed, dropped []string
	missing := false
	for _, id := range ids {
		subs := cp.Operators[id]
		if !hasState(subs) {
			continue
		}
		n := byID[id]
		why := r.unclaimedBecause(id, subs[0], n)
		if why == "" {
			continue
		}
		missing = missing || n == nil
		unclaimed = append(unclaimed, describeState(id, subs)+": "+why)
		dropped = append(dropped, id)
	}
	if len(unclaimed) == 0 {
		return nil
	}
	if !allow {
		hint := ""
		if missing {
			hint = "An operator without .UID(...) has an id derived from its place in the job's graph, as in Flink, so adding or removing an operator before it, " +
				"or a change of chaining, changes the id; give stateful operators the same .UID(...) in both versions of the job, or "
		} else {
			hint = "Change the job back, or "
		}
		return fmt.Errorf("weir: cannot restore from %s: the state of %d operator(s) would not be restored: %s. %srestore with weir.AllowNonRestoredState() to drop that state",
			what, len(unclaimed), strings.Join(unclaimed, "; "), hint)
	}
	r.Logger().Warn("restoring without state no operator of the job claims (AllowNonRestoredState)", "from", what, "dropped", unclaimed)
	for _, id := range dropped {
		delete(cp.Operators, id)
	}
	if c := r.Cfg.Checkpoint; c != nil {
		if d, ok := c.Store.(Dropper); ok {
			d.Dropped(cp, dropped)
		}
	}
	return nil
}

// unclaimedBecause says why the saved state of operator id (of which snap
// is the first subtask's) would not be restored into n, the job's operator
// with that id (nil if none), or returns "" if it would.
func (r *Runner) unclaimedBecause(id string, snap engine.OperatorSnapshot, n *engine.Node) string {
	switch {
	case n == nil:
		if pos, ok := engine.LegacyID(id); ok {
			why := "a positional id of Weir before automatic ids followed the graph, which no operator has now"
			if pos <= len(r.Nodes) && r.Nodes[pos-1].Kind != engine.KindExternal {
				o := r.Nodes[pos-1]
				why += fmt.Sprintf(" (it was the job's operator number %d; if that is still %q (%s), give it .UID(%q) to restore this state into it)", pos, o.Name, o.Operator, id)
			}
			return why
		}
		return "no operator of the job has this id"
	case snap.Kind != "" && !sameKind(snap.Kind, n.Operator):
		why := fmt.Sprintf("the job's operator with this id is %q (%s), another kind of operator", n.Name, n.Operator)
		if strings.HasPrefix(snap.Kind, "source ") && strings.HasPrefix(n.Operator, "source ") {
			why = fmt.Sprintf("the job's operator with this id is the source %q (%s): the source was replaced by another kind of source", n.Name, n.Operator)
		}
		return why
	}
	return ""
}

// sameKind reports whether state saved by an operator of kind saved may
// be restored into one of kind now: the same kind, or one that a Weir
// version renamed without changing its state. v0.1 ran the file and socket
// sources through an adapter (internal/runsrc), so its savepoints record
// them as "source runsrc.Source"; from v0.2 on they are the connectors'
// own types, with the same splits and positions.
func sameKind(saved, now string) bool {
	if saved == now {
		return true
	}
	switch saved {
	case "source runsrc.Source":
		return now == "source file.textSource" || now == "source socket.textSource"
	}
	return false
}

// describeState names an operator's saved state and says how much there
// is: `operator 1f3a... ("KeyedProcess", KeyedProcess): 2 subtasks, 10
// key groups, 1.2 KiB`.
func describeState(id string, subs []engine.OperatorSnapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "operator %s", id)
	switch s := subs[0]; {
	case s.Name != "" && s.Kind != "":
		fmt.Fprintf(&b, " (%q, %s)", s.Name, s.Kind)
	case s.Name != "":
		fmt.Fprintf(&b, " (%q)", s.Name)
	}
	var bytes int64
	keyGroups, files := 0, false
	for _, s := range subs {
		bytes += int64(len(s.State) + len(s.ChannelState))
		for _, kg := range s.KeyGroups {
			bytes += int64(len(kg))
		}
		keyGroups += len(s.KeyGroups)
		files = files || s.KeyedFiles != nil
	}
	fmt.Fprintf(&b, ": %d subtask(s)", len(subs))
	if keyGroups > 0 {
		fmt.Fprintf(&b, ", %d key groups", keyGroups)
	}
	fmt.Fprintf(&b, ", %s", byteSize(bytes))
	if files {
		b.WriteString(" plus keyed state in database files")
	}
	return b.String()
}

// byteSize formats n bytes as "512 B", "1.2 KiB", "3.4 MiB", ...
func byteSize(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if f < 1024 {
			break
		}
		f, unit = f/1024, u
	}
	return fmt.Sprintf("%.1f %s", f, unit)
}

func hasState(subs []engine.OperatorSnapshot) bool {
	for _, s := range subs {
		if len(s.State) > 0 || len(s.KeyGroups) > 0 || len(s.ChannelState) > 0 {
			return true
		}
	}
	return false
}

// BuildPlan builds the physical plan, restoring from cp if it is not nil.
func (r *Runner) BuildPlan(ctx context.Context, cp *durable.Checkpoint) (*engine.Plan, error) {
	c := r.Cfg
	cfg := engine.Config{
		MaxParallelism: c.MaxParallelism,
		BatchSize:      c.BatchSize,
		Credits:        c.Credits,
		Chaining:       c.Chaining,
		Clock:          c.Clock,
		KeySample:      c.KeySample,
	}
	var first int64
	if cp != nil {
		if cp.MaxParallelism != 0 && cp.MaxParallelism != c.MaxParallelism {
			return nil, fmt.Errorf("weir: checkpoint %d was taken with max parallelism %d, the job has %d; key groups cannot be remapped", cp.ID, cp.MaxParallelism, c.MaxParallelism)
		}
		cfg.Restore = copyOps(cp.Operators)
		first = cp.ID
	}
	if c.Checkpoint != nil {
		// Number new checkpoints after any already in the store.
		last, err := lastCheckpointID(ctx, c.Checkpoint.Store)
		if err != nil {
			return nil, fmt.Errorf("weir: reading the checkpoint store: %w", err)
		}
		first = max(first, last)
	}
	if !r.numbered {
		r.numbered, r.firstID = true, first
	}
	cfg.Checkpoint = r.checkpointConfig(first)
	p, err := engine.BuildPlan(ctx, r.Nodes, cfg)
	if err != nil {
		return nil, fmt.Errorf("weir: invalid job: %w", err)
	}
	return p, nil
}

// copyOps copies a checkpoint's snapshots for the runtime.
func copyOps(ops map[string][]engine.OperatorSnapshot) map[string][]engine.OperatorSnapshot {
	return ConvertOps(ops, func(s engine.OperatorSnapshot) engine.OperatorSnapshot { return s })
}

// failAttempt fails the running attempt of the job with err (the
// coordinator calls it when too many checkpoints failed).
func (r *Runner) failAttempt(err error) {
	r.mu.Lock()
	cancel := r.cancelAttempt
	r.mu.Unlock()
	if cancel != nil {
		cancel(err)
	}
}

// Start runs the job's attempts (Run) on jctx, a child of ctx, on a
// goroutine of its own. ended decides how the job ended from Run's error
// and returns the job's error, and the savepoint's path if it was stopped
// with one; the end is logged, then done is called.
func (r *Runner) Start(ctx, jctx context.Context, p *engine.Plan, setPlan func(*engine.Plan), onFinished []func() error, log *slog.Logger,
	ended func(error) (savepoint string, stopped bool, err error), done func()) {
	go func() {
		defer done()
		savepoint, stopped, err := ended(r.Run(jctx, p, setPlan, onFinished, log))
		switch {
		case err == nil:
			log.Debug("job finished")
		case stopped:
			log.Info("job stopped with a savepoint", "savepoint", savepoint)
		case jctx.Err() != nil:
			if cause := context.Cause(ctx); cause != nil && cause != err {
				log.Info("job cancelled", "cause", cause.Error())
			} else {
				log.Info("job cancelled", "reason", err.Error())
			}
		default:
			msg, _ := SplitStack(err)
			log.Error("job failed", "err", msg)
		}
		r.Mon.End()
	}()
}

// Run runs the plan and, after a failure, restarts the job from its latest
// completed checkpoint as the restart strategy allows; setPlan is told
// each new attempt's plan, and onFinished run once the job finished.
func (r *Runner) Run(ctx context.Context, p *engine.Plan, setPlan func(*engine.Plan), onFinished []func() error, log *slog.Logger) error {
	restart, clk := r.Cfg.Restart, r.Cfg.Clock
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithCancelCause(ctx)
		r.mu.Lock()
		r.cancelAttempt = cancel
		r.mu.Unlock()
		err := p.Run(actx)
		r.Staged.Discard()
		if cause := context.Cause(actx); ctx.Err() == nil && errors.Is(cause, engine.ErrTooManyCheckpointFailures) {
			err = fmt.Errorf("weir: %w", cause)
		}
		r.mu.Lock()
		r.cancelAttempt = nil
		r.mu.Unlock()
		cancel(nil)
		if err != nil && ctx.Err() == nil {
			r.Mon.Failure(err)
		}
		if err == nil {
			for _, f := range onFinished {
				if err := f(); err != nil {
					return err
				}
			}
			return nil
		}
		if ctx.Err() != nil || restart == nil || errors.Is(err, state.ErrIncompatible) {
			return err // a restart would refuse the same state again
		}
		delay, ok := restart(attempt)
		if !ok {
			return fmt.Errorf("weir: giving up after %d restarts: %w", attempt-1, err)
		}
		msg, stack := SplitStack(err)
		if stack != "" {
			log.Warn("job failed; restarting", "attempt", attempt, "delay", delay, "err", msg, "stack", stack)
		} else {
			log.Warn("job failed; restarting", "attempt", attempt, "delay", delay, "err", msg)
		}
		r.Mon.Restarting(true)
		if err := clock.Sleep(ctx, clk, clk.NowMillis()+delay.Milliseconds()); err != nil {
			return err
		}
		cp, err := r.failoverPoint(ctx)
		if err != nil {
			return err
		}
		if cp != nil {
			log.Info("restoring from checkpoint", "checkpoint", cp.ID)
		}
		if p, err = r.BuildPlan(ctx, cp); err != nil {
			return err
		}
		setPlan(p)
		r.Mon.Restarting(false)
	}
}

// SplitStack returns err's message without the stack of the panic it
// carries, and that stack ("" if none).
func SplitStack(err error) (msg, stack string) {
	msg = err.Error()
	var oe *engine.OperatorError
	if errors.As(err, &oe) && oe.Stack != "" {
		return strings.Replace(msg, "\n"+oe.Stack, "", 1), oe.Stack
	}
	return msg, ""
}

// failoverPoint returns what a restarted attempt restores from: the latest
// checkpoint this job completed, else what the job started from.
func (r *Runner) failoverPoint(ctx context.Context) (*durable.Checkpoint, error) {
	if c := r.Cfg.Checkpoint; c != nil {
		cp, err := c.Store.Latest(ctx)
		if err != nil {
			return nil, fmt.Errorf("weir: reading the latest checkpoint: %w", err)
		}
		if cp != nil && cp.ID > r.firstID {
			return cp, nil
		}
	}
	return r.base, nil
}
