package cluster

import (
	"context"
	"github.com/weirstream/weir/internal/clusterjob"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCheckTransactionsNoCoordinator: brokers that never find a
// transaction coordinator (their transaction state log cannot be
// created) fail the start after the probe's timeout, saying why, instead
// of hanging.
func TestCheckTransactionsNoCoordinator(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	fake.ControlKey(int16(kmsg.FindCoordinator), func(req kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		fc := req.(*kmsg.FindCoordinatorRequest)
		if fc.CoordinatorType != 1 { // transactions
			return nil, nil, false
		}
		resp := fc.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		for _, k := range fc.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, kmsg.FindCoordinatorResponseCoordinator{Key: k, NodeID: -1, ErrorCode: kerr.CoordinatorNotAvailable.Code})
		}
		return resp, nil, true
	})
	m := &member{cfg: Config{Spec: clusterjob.Spec{Job: "notxn"}, Brokers: fake.ListenAddrs()}, probeTimeout: time.Second}
	err = checkTransactions(context.Background(), m)
	if err == nil || !strings.Contains(err.Error(), "refuse a transactional producer") || !strings.Contains(err.Error(), "COORDINATOR_NOT_AVAILABLE") {
		t.Fatalf("got %v, want a refusal naming the missing coordinator", err)
	}
}
