package keyedsnap

import (
	"context"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/timer"
)

// Operator is Snapshot as an operator's snapshot.
func Operator[K comparable, N comparable](b Backend, t *timer.Service[K, N]) (engine.OperatorSnapshot, error) {
	kgs, err := Snapshot(b, t)
	return engine.OperatorSnapshot{KeyGroups: kgs}, err
}

// OperatorAsync is SnapshotAsync as an operator's asynchronous snapshot.
func OperatorAsync[K comparable, N comparable](b Backend, t *timer.Service[K, N]) (engine.AsyncSnapshot, error) {
	async, err := SnapshotAsync(b, t)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (engine.OperatorSnapshot, error) {
		kgs, err := async(ctx)
		return engine.OperatorSnapshot{KeyGroups: kgs}, err
	}, nil
}

// Ready hands over a snapshot taken whole (snap, err) as an asynchronous
// one.
func Ready(snap engine.OperatorSnapshot, err error) (engine.AsyncSnapshot, error) {
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (engine.OperatorSnapshot, error) { return snap, ctx.Err() }, nil
}

// WithState adds the operator state that snap encodes now to the
// asynchronous keyed snapshot keyed; if snap fails, keyed is called with
// an ended context to release its view.
func WithState(keyed engine.AsyncSnapshot, snap func() (engine.OperatorSnapshot, error)) (engine.AsyncSnapshot, error) {
	bs, err := snap()
	if err != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		keyed(ctx) //nolint:errcheck // releases the view
		return nil, err
	}
	return func(ctx context.Context) (engine.OperatorSnapshot, error) {
		ks, err := keyed(ctx)
		ks.State = bs.State
		return ks, err
	}, nil
}
