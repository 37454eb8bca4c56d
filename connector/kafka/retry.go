package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// retriableTxnErr reports whether a raw transaction request (InitProducerID,
// EndTxn) that failed with err may be sent again: franz-go's classification
// (kerr.IsRetriable: a coordinator loading or moving, a broker not ready),
// and CONCURRENT_TRANSACTIONS, which the coordinator answers while it is
// still completing the id's previous transaction (an InitProducerID
// right after a crash aborts the open transaction and answers this until
// the abort is written). kerr marks it not retriable because a producer
// must not retry a request of its own transaction blindly, but for these
// requests it is the broker's "try again", as the Java client treats it.
func retriableTxnErr(err error) bool {
	return kerr.IsRetriable(err) || errors.Is(err, kerr.ConcurrentTransactions)
}

// retryTxn runs req until it succeeds, fails with an error that is not
// retriable (retriableTxnErr), or the time is up: bound after the first
// attempt, or ctx's deadline. Attempts are spaced 20 ms apart at first,
// doubling up to 1 s. On timeout the last error is returned.
func retryTxn(ctx context.Context, bound time.Duration, req func(context.Context) error) error {
	deadline := time.Now().Add(bound)
	wait := 20 * time.Millisecond
	for {
		err := req(ctx)
		if err == nil || !retriableTxnErr(err) || ctx.Err() != nil {
			return err
		}
		if time.Now().Add(wait).After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}
