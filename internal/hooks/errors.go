package hooks

import "errors"

// ErrNoSavepointTarget is what a job's savepoint returns (wrapped) when
// asked for a savepoint without a directory while it has no default one;
// the REST server answers 400 for it. It lives here, not in the control
// client, so that the root does not link net/http.
var ErrNoSavepointTarget = errors.New("no savepoint directory given, and the job has no default savepoint directory")
