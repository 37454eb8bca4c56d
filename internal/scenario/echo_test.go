package scenario

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// echoDriver is a fake operator: a record on input 1 comes out as
// `out key ts value`, a record on input 2 as `side in2 key ts value`, a
// watermark as `wm ts`, a status change as `status idle|active`; proc emits
// nothing; end emits `wm <max>` once per channel of each input.
type echoDriver struct {
	inputs, channels int
	failAt, panicAt  int64
	hasFail, hasPnc  bool
	reverse          bool
	garbage          bool
	out              []string
}

func newEcho(spec Spec) (Driver, error) {
	if err := spec.CheckKnown([]string{"inputs", "channels", "fail-at", "panic-at"}, []string{"reverse", "garbage"}); err != nil {
		return nil, err
	}
	d := &echoDriver{reverse: spec.Flag("reverse"), garbage: spec.Flag("garbage")}
	in, err := spec.Int64("inputs", 1)
	if err != nil {
		return nil, err
	}
	if in != 1 && in != 2 {
		return nil, fmt.Errorf("inputs=%d: want 1 or 2", in)
	}
	ch, err := spec.Int64("channels", 1)
	if err != nil {
		return nil, err
	}
	if ch < 1 {
		return nil, fmt.Errorf("channels=%d: want at least 1", ch)
	}
	d.inputs, d.channels = int(in), int(ch)
	d.hasFail = spec.Has("fail-at")
	if d.failAt, err = spec.Int64("fail-at", 0); err != nil {
		return nil, err
	}
	d.hasPnc = spec.Has("panic-at")
	if d.panicAt, err = spec.Int64("panic-at", 0); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *echoDriver) where(input, channel int) error {
	if input < 1 || input > d.inputs {
		return fmt.Errorf("no input %d (inputs=%d)", input, d.inputs)
	}
	if channel < 0 || channel >= d.channels {
		return fmt.Errorf("no channel %d (channels=%d)", channel, d.channels)
	}
	return nil
}

func (d *echoDriver) Record(input, channel int, key string, ts int64, value string) error {
	if err := d.where(input, channel); err != nil {
		return err
	}
	if d.hasFail && ts == d.failAt {
		return errors.New("echo failure")
	}
	if d.hasPnc && ts == d.panicAt {
		panic("echo panic")
	}
	if d.garbage {
		d.out = append(d.out, "bogus "+key)
		return nil
	}
	if input == 2 {
		d.out = append(d.out, "side in2 "+key+" "+strconv.FormatInt(ts, 10)+" "+value)
	} else {
		d.out = append(d.out, "out "+key+" "+strconv.FormatInt(ts, 10)+" "+value)
	}
	return nil
}

func (d *echoDriver) Watermark(input, channel int, ts int64) error {
	if err := d.where(input, channel); err != nil {
		return err
	}
	d.out = append(d.out, "wm "+strconv.FormatInt(ts, 10))
	return nil
}

func (d *echoDriver) Status(input, channel int, idle bool) error {
	if err := d.where(input, channel); err != nil {
		return err
	}
	if idle {
		d.out = append(d.out, "status idle")
	} else {
		d.out = append(d.out, "status active")
	}
	return nil
}

func (d *echoDriver) ProcessingTime(int64) error { return nil }

func (d *echoDriver) End() error {
	for in := 1; in <= d.inputs; in++ {
		for ch := 0; ch < d.channels; ch++ {
			if err := d.Watermark(in, ch, math.MaxInt64); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *echoDriver) Outputs() []string {
	out := d.out
	d.out = nil
	if d.reverse {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

func echoRunner() *Runner {
	return &Runner{
		Ops: map[string]Factory{"echo": newEcho},
		Unavailable: map[string]string{
			"window": "the window operator is not available in this build yet",
		},
	}
}
