package state

import (
	"strings"
	"testing"
	"time"
)

func TestTTLDefaults(t *testing.T) {
	c := TTL(time.Minute)
	want := TTLConfig{TTL: time.Minute, Update: UpdateOnCreateAndWrite, Visibility: NeverReturnExpired, CleanupEntries: 5}
	if c != want {
		t.Fatalf("TTL(1m) = %+v, want %+v", c, want)
	}
	if !c.Enabled() || !c.IncrementalCleanup() || c.CleanupEveryRecord {
		t.Fatal("defaults: TTL enabled with incremental cleanup of 5 entries, not per record")
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTTLEnabled(t *testing.T) {
	if (TTLConfig{}).Enabled() {
		t.Error("zero config enabled")
	}
	if err := (TTLConfig{}).Validate(); err != nil {
		t.Errorf("zero config invalid: %v", err)
	}
	c := TTL(time.Second)
	c.Update = UpdateDisabled
	if c.Enabled() || c.IncrementalCleanup() {
		t.Error("UpdateDisabled config enabled")
	}
	c = TTL(time.Second)
	c.DisableBackgroundCleanup = true
	if !c.Enabled() || c.IncrementalCleanup() {
		t.Error("DisableBackgroundCleanup")
	}
	c = TTL(time.Second)
	c.CleanupEntries = 0
	if c.IncrementalCleanup() {
		t.Error("0 cleanup entries")
	}
}

func TestTTLValidate(t *testing.T) {
	bad := map[string]TTLConfig{
		"zero ttl":           TTL(0),
		"negative ttl":       TTL(-time.Second),
		"sub-millisecond":    TTL(time.Microsecond),
		"negative cleanup":   {TTL: time.Second, CleanupEntries: -1},
		"unknown update":     {TTL: time.Second, Update: 7},
		"unknown visibility": {TTL: time.Second, Visibility: 7},
		"zero ttl, other field set": {
			Visibility: ReturnExpiredIfNotCleanedUp,
		},
	}
	for name, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: %+v accepted", name, c)
		}
	}
	good := []TTLConfig{TTL(time.Millisecond), {TTL: time.Hour}, {Update: UpdateDisabled}}
	for _, c := range good {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v rejected: %v", c, err)
		}
	}
}

type sumAgg struct{}

func (sumAgg) CreateAccumulator() int   { return 0 }
func (sumAgg) Add(v, acc int) int       { return v + acc }
func (sumAgg) GetResult(acc int) string { return "" }
func (sumAgg) Merge(a, b int) int       { return a + b }

func TestDescriptors(t *testing.T) {
	ttl := TTL(time.Second)
	v := Value[int]("v", WithTTL(ttl))
	if v.Name != "v" || v.TTL != ttl || v.Validate() != nil {
		t.Errorf("Value = %+v", v)
	}
	l := List[int]("l")
	if l.Name != "l" || l.TTL != (TTLConfig{}) || l.Validate() != nil {
		t.Errorf("List = %+v", l)
	}
	m := Map[string, int]("m", nil, WithTTL(ttl))
	if m.Name != "m" || m.TTL != ttl || m.Validate() != nil {
		t.Errorf("Map = %+v", m)
	}
	r := Reducing("r", func(a, b int) int { return a + b })
	if r.Name != "r" || r.Reduce == nil || r.Validate() != nil {
		t.Errorf("Reducing = %+v", r)
	}
	a := Aggregating[int, int, string]("a", sumAgg{})
	if a.Name != "a" || a.Function == nil || a.Validate() != nil {
		t.Errorf("Aggregating = %+v", a)
	}

	errs := map[string]error{
		"value empty name":       Value[int]("").Validate(),
		"list empty name":        List[int]("").Validate(),
		"map empty name":         Map[int, int]("").Validate(),
		"reducing empty name":    Reducing("", func(a, b int) int { return a }).Validate(),
		"aggregating empty name": Aggregating[int, int, string]("", sumAgg{}).Validate(),
		"reducing nil func":      Reducing[int]("r", nil).Validate(),
		"aggregating nil func":   Aggregating[int, int, string]("a", nil).Validate(),
		"bad ttl":                Value[int]("v", WithTTL(TTL(-1))).Validate(),
	}
	for name, err := range errs {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := Reducing[int]("myname", nil).Validate(); !strings.Contains(err.Error(), "myname") {
		t.Errorf("error %q does not name the state", err)
	}
	if err := List[int]("ttl-list", WithTTL(TTL(0))).Validate(); err == nil || !strings.Contains(err.Error(), "ttl-list") {
		t.Errorf("error %v does not name the state", err)
	}
}

func TestEnumStrings(t *testing.T) {
	for v, want := range map[UpdateType]string{
		UpdateOnCreateAndWrite: "OnCreateAndWrite", UpdateOnReadAndWrite: "OnReadAndWrite",
		UpdateDisabled: "Disabled", 9: "UpdateType(9)",
	} {
		if v.String() != want {
			t.Errorf("%d: %q, want %q", int(v), v.String(), want)
		}
	}
	for v, want := range map[Visibility]string{
		NeverReturnExpired: "NeverReturnExpired", ReturnExpiredIfNotCleanedUp: "ReturnExpiredIfNotCleanedUp", 9: "Visibility(9)",
	} {
		if v.String() != want {
			t.Errorf("%d: %q, want %q", int(v), v.String(), want)
		}
	}
}
