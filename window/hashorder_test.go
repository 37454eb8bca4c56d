package window

import (
	"fmt"
	"strings"
	"testing"
)

// Vectors from java.util.HashSet<TimeWindow> on Java 17 (Flink's
// TimeWindow.hashCode), windows added in the order of the first column:
// 5 windows (16 buckets), 13 (32 buckets after one resize) and 28 (64).
// The same check passed for 300 random sets of 2 to 91 windows.
func TestJavaHashSetOrder(t *testing.T) {
	cases := []struct{ in, want string }{
		{"474,482 477,478 478,484 484,494 489,491", "478,484 477,478 474,482 484,494 489,491"},
		{"268,269 273,276 277,286 280,288 280,289 284,294 285,294 286,295 289,296 290,297 291,295 292,302 294,304",
			"268,269 277,286 294,304 280,289 289,296 284,294 286,295 285,294 290,297 280,288 273,276 291,295 292,302"},
		{"133,139 134,143 135,136 137,139 138,148 139,140 140,148 141,147 142,149 142,151 147,156 148,158 149,155 153,160 157,160 160,162 165,167 166,174 167,173 170,177 173,175 173,179 173,178 174,177 178,186 178,183 182,191 183,188",
			"178,183 170,177 183,188 148,158 135,136 166,174 167,173 149,155 157,160 182,191 173,179 139,140 134,143 140,148 141,147 142,149 178,186 165,167 173,175 133,139 137,139 147,156 153,160 173,178 174,177 138,148 160,162 142,151"},
	}
	for _, c := range cases {
		var ws []TimeWindow
		for _, f := range strings.Fields(c.in) {
			var w TimeWindow
			if _, err := fmt.Sscanf(f, "%d,%d", &w.Start, &w.End); err != nil {
				t.Fatal(err)
			}
			ws = append(ws, w)
		}
		javaHashSetOrder(ws)
		got := make([]string, len(ws))
		for i, w := range ws {
			got[i] = fmt.Sprintf("%d,%d", w.Start, w.End)
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%d windows:\n got %s\nwant %s", len(ws), g, c.want)
		}
	}
}
