package queries

import (
	"encoding/json"
	"testing"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/nexmark"
)

// checkAppendJSON checks that T's AppendJSON appends exactly what
// json.Marshal gives, for arbitrary values (rapid.Make: any field values,
// nil and non-nil pointers, strings of any bytes).
func checkAppendJSON[T kafka.JSONAppender](t *testing.T) {
	t.Helper()
	rapid.Check(t, func(rt *rapid.T) {
		v := rapid.Make[T]().Draw(rt, "v")
		want, err := json.Marshal(v)
		if err != nil {
			rt.Fatal(err)
		}
		got, err := v.AppendJSON([]byte("x"))
		if err != nil || string(got) != "x"+string(want) {
			rt.Fatalf("AppendJSON = %s, %v\nwant x%s", got, err, want)
		}
	})
}

// TestResultsAppendJSON: the result types' AppendJSON methods encode as
// encoding/json does.
func TestResultsAppendJSON(t *testing.T) {
	checkAppendJSON[nexmark.Event](t)
	checkAppendJSON[nexmark.Bid](t)
	checkAppendJSON[Q2Result](t)
	checkAppendJSON[Q3Result](t)
	checkAppendJSON[Q13Result](t)
	checkAppendJSON[Q19Result](t)
	checkAppendJSON[Q20Result](t)
	checkAppendJSON[Q21Result](t)
	checkAppendJSON[Q22Result](t)
	checkAppendJSON[Q23Result](t)
}
