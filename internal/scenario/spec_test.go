package scenario

import (
	"strings"
	"testing"
)

func specOf(t *testing.T, line string) Spec {
	t.Helper()
	return mustParse(t, line+"\n").Spec
}

func TestSpecHelpers(t *testing.T) {
	s := specOf(t, "op window assigner=tumbling size=10 offset=-3 bad=x1 purging")
	if got, err := s.Int64("size", 0); err != nil || got != 10 {
		t.Errorf("Int64(size) = %d, %v", got, err)
	}
	if got, err := s.Int64("offset", 0); err != nil || got != -3 {
		t.Errorf("Int64(offset) = %d, %v", got, err)
	}
	if got, err := s.Int64("lateness", 7); err != nil || got != 7 {
		t.Errorf("Int64(lateness) default = %d, %v", got, err)
	}
	if _, err := s.Int64("bad", 0); err == nil || !strings.Contains(err.Error(), "bad=x1") {
		t.Errorf("Int64(bad) error = %v", err)
	}
	if got := s.String("assigner", "global"); got != "tumbling" {
		t.Errorf("String(assigner) = %q", got)
	}
	if got := s.String("time", "event"); got != "event" {
		t.Errorf("String(time) default = %q", got)
	}
	if !s.Flag("purging") || s.Flag("size") || !s.Has("size") || s.Has("purging") {
		t.Errorf("Flag/Has wrong")
	}
	if got, err := s.OneOf("assigner", "global", "tumbling", "sliding"); err != nil || got != "tumbling" {
		t.Errorf("OneOf = %q, %v", got, err)
	}
	if _, err := s.OneOf("assigner", "global", "session"); err == nil || !strings.Contains(err.Error(), "assigner=tumbling") {
		t.Errorf("OneOf error = %v", err)
	}
	if err := s.Require("size", "assigner"); err != nil {
		t.Errorf("Require: %v", err)
	}
	if err := s.Require("size", "slide", "gap"); err == nil || !strings.Contains(err.Error(), "slide, gap") {
		t.Errorf("Require error = %v", err)
	}
	if err := s.Require("n"); err == nil || !strings.Contains(err.Error(), "n=") {
		t.Errorf("Require(n) error = %v", err)
	}
}

func TestSpecCheckKnown(t *testing.T) {
	s := specOf(t, "op window size=10 fn=sum purging")
	if err := s.CheckKnown([]string{"size", "fn", "slide"}, []string{"purging"}); err != nil {
		t.Errorf("CheckKnown: %v", err)
	}
	err := s.CheckKnown([]string{"size"}, []string{"purging"})
	if err == nil || !strings.Contains(err.Error(), "unknown parameter fn") {
		t.Errorf("unknown param: %v", err)
	}
	err = s.CheckKnown([]string{"size", "fn"}, nil)
	if err == nil || !strings.Contains(err.Error(), "unknown flag purging") {
		t.Errorf("unknown flag: %v", err)
	}
	err = s.CheckKnown([]string{"fn", "purging"}, []string{"size"})
	if err == nil || !strings.Contains(err.Error(), "flag size takes no value") ||
		!strings.Contains(err.Error(), "parameter purging needs a value") {
		t.Errorf("param/flag confusion: %v", err)
	}
	// The zero Spec has nil maps and must not panic.
	var zero Spec
	if err := zero.CheckKnown(nil, nil); err != nil {
		t.Errorf("zero CheckKnown: %v", err)
	}
	if v, err := zero.Int64("x", 3); v != 3 || err != nil {
		t.Errorf("zero Int64 = %d, %v", v, err)
	}
}
