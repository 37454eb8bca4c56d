package weir

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/hooks"
)

// The root's side of the test harness (package weirtest): an environment
// whose clock implements hooks.HarnessClock gets a harnessEnv, through
// which weirtest adds external inputs and capturing sinks and plans the
// job, which it then drives synchronously.

// harnessEnv implements hooks.HarnessEnv for one environment.
type harnessEnv struct{ env *Environment }

// harnessStream is implemented by *DataStream[T].
type harnessStream interface {
	harnessExternal(env *Environment, name string, channels int)
}

// harnessOutput is implemented by DataStream[T].
type harnessOutput interface {
	harnessCapture(env *Environment, rec func(hooks.HarnessEvent)) error
}

// sideCapture is implemented by OutputTag[T].
type sideCapture interface {
	captureSide(env *Environment, n *engine.Node, rec func(hooks.HarnessEvent))
}

func (h harnessEnv) ExternalInput(ds any, name string, channels int) error {
	s, ok := ds.(harnessStream)
	if !ok {
		return fmt.Errorf("harness: %T is not a *weir.DataStream", ds)
	}
	s.harnessExternal(h.env, name, channels)
	return nil
}

func (h harnessEnv) Capture(ds any, rec func(hooks.HarnessEvent)) error {
	s, ok := ds.(harnessOutput)
	if !ok {
		return fmt.Errorf("harness: %T is not a weir.DataStream", ds)
	}
	return s.harnessCapture(h.env, rec)
}

func (h harnessEnv) CaptureSide(ds any, tag any, rec func(hooks.HarnessEvent)) error {
	t, ok := tag.(sideCapture)
	if !ok {
		return fmt.Errorf("harness: %T is not a weir.OutputTag", tag)
	}
	s, ok := ds.(interface{ harnessNode() *engine.Node })
	if !ok {
		return fmt.Errorf("harness: %T is not a weir.DataStream", ds)
	}
	t.captureSide(h.env, s.harnessNode(), rec)
	return nil
}

func (h harnessEnv) Plan() (*engine.Plan, error) { return h.env.plan(context.Background()) }

func (ds *DataStream[T]) harnessExternal(env *Environment, name string, channels int) {
	n := &engine.Node{ID: len(env.nodes) + 1, Name: name, Kind: engine.KindExternal, Parallelism: 1, Channels: channels}
	env.nodes = append(env.nodes, n)
	*ds = streamOf[T](env, n)
}

func (ds DataStream[T]) harnessNode() *engine.Node { return ds.single("harness") }

func (ds DataStream[T]) harnessCapture(env *Environment, rec func(hooks.HarnessEvent)) error {
	if ds.env != env {
		return fmt.Errorf("harness: build must derive its result from the given input")
	}
	captureSink(ds, rec, "")
	return nil
}

func (t OutputTag[T]) captureSide(env *Environment, n *engine.Node, rec func(hooks.HarnessEvent)) {
	ds := DataStream[T]{env: env, origins: []origin[T]{{node: n, tag: t.id}}}
	captureSink(ds, rec, t.id)
}

func captureSink[T any](ds DataStream[T], rec func(hooks.HarnessEvent), tag string) {
	n := newNode[struct{}](ds.env, "HarnessOutput", engine.KindOneInput, 1,
		func(*engine.BuildContext, *engine.Output[struct{}]) (engine.Built, error) {
			return engine.Built{Inputs: []any{engine.Input[T](&hooks.CaptureOp[T]{Rec: rec, Tag: tag})}}, nil
		})
	n.Sink = true
	ds.connect(n, 0)
}
