package timer

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

type fakeScheduler struct {
	asked []int64
	cbs   []func(int64) error
}

func (f *fakeScheduler) Schedule(at int64, cb func(int64) error) {
	f.asked = append(f.asked, at)
	f.cbs = append(f.cbs, cb)
}

// TestDriver: the driver schedules the earliest processing-time timer
// (a restored one at Start, a registered one only when earlier), fires
// due timers in their domain, re-arms for the next one, and its
// callback's errors and panics pass through catch.
func TestDriver(t *testing.T) {
	s := NewService[string, struct{}]()
	s.RegisterProcessingTime("restored", 0, struct{}{}, 50)
	pts := &fakeScheduler{}
	d := NewDriver[string, struct{}](s, pts)
	var fired []string
	fail := errors.New("boom")
	d.Start(func(tm Timer[string, struct{}], eventTime bool) error {
		fired = append(fired, fmt.Sprintf("%s@%d/%v", tm.Key, tm.Timestamp, eventTime))
		if tm.Key == "fails" {
			return fail
		}
		return nil
	}, func(err *error) {
		if r := recover(); r != nil {
			*err = fmt.Errorf("caught %v", r)
		}
	})
	for _, ts := range []int64{70, 40, 60} {
		s.RegisterProcessingTime(fmt.Sprint("p", ts), 0, struct{}{}, ts)
		d.Registered(ts)
	}
	if want := []int64{50, 40}; !reflect.DeepEqual(pts.asked, want) {
		t.Fatalf("scheduled %v, want %v", pts.asked, want)
	}
	if err := pts.cbs[1](55); err != nil {
		t.Fatal(err)
	}
	if want := []int64{50, 40, 60}; !reflect.DeepEqual(pts.asked, want) {
		t.Fatalf("after firing at 55: scheduled %v, want %v", pts.asked, want)
	}
	s.RegisterEventTime("e", 0, struct{}{}, 10)
	if err := d.AdvanceWatermark(10); err != nil {
		t.Fatal(err)
	}
	if want := []string{"p40@40/false", "restored@50/false", "e@10/true"}; !reflect.DeepEqual(fired, want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	s.RegisterProcessingTime("fails", 0, struct{}{}, 65)
	d.Registered(65)
	if err := pts.cbs[len(pts.cbs)-1](65); !errors.Is(err, fail) {
		t.Fatalf("callback returned %v, want %v", err, fail)
	}
}
