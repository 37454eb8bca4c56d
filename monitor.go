package weir

import (
	jobpkg "github.com/weirstream/weir/internal/job"
	"github.com/weirstream/weir/internal/monitor"
)

// The job's model for the REST API, Prometheus, the dashboard and
// `weir doctor` (internal/monitor), built from JobHandle.Metrics, the
// plan's vertices and the checkpoint statistics.

type monitorSnapshot = monitor.Snapshot

// defaultKeySample is the default key-sketch stride (WithKeySampling).
const defaultKeySample = 1024

// WithKeySampling sets how many records of a keyBy share one sample for
// its key sketch (the heaviest keys the REST API, the dashboard and
// `weir doctor` show): one record in every (default 1024, 0 disables the
// sketches). A sample costs a key formatting and a sketch update.
func WithKeySampling(every int) Option { return func(c *config) { c.keySample = max(every, 0) } }

// ID returns the job's id: 32 hex digits, new at each ExecuteAsync, as
// Flink's JobID (the REST API's :jobid).
func (h *JobHandle) ID() string { return h.env.eng.Mon.ID() }

// state returns the job's Flink status.
func (h *JobHandle) state() string {
	select {
	case <-h.done:
	default:
		if h.env.eng.Mon.IsRestarting() {
			return "RESTARTING"
		}
		return "RUNNING"
	}
	// Flink's status of a job stopped with a savepoint is FINISHED;
	// Job.Status tells it apart.
	switch h.Status().Status {
	case JobFinished, JobStoppedWithSavepoint:
		return "FINISHED"
	case JobCanceled:
		return "CANCELED"
	}
	return "FAILED"
}

// snapshot builds the job's monitor.Snapshot.
func (h *JobHandle) snapshot() *monitor.Snapshot {
	return h.env.eng.Snapshot(jobpkg.Handle{
		Name: h.name, Plans: h.taskPlans(), Owned: h.cluster,
		Status: func() (string, string, string) {
			st := h.state()
			res := h.Status()
			return st, res.Status.String(), res.Savepoint
		},
	})
}

func (e *Environment) stateBackendName() string {
	if e.cfg.stateBackend == nil {
		return "hashmap"
	}
	return e.cfg.stateBackend.Name()
}
