package kineto

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Grid and block arrays are packed when written as Kineto writes them and
// kept as raw JSON otherwise; either way their text is the file's, and
// the per-launch values read back whichever way they are stored, in one
// pass and with the workers.
func TestLaunchArgsReadBack(t *testing.T) {
	grids := []string{
		"[82666, 1, 1]", "[0, 65535, 65535]", "[4294967295, 1, 1]",
		"[4294967296, 1, 1]", "[1, 65536, 1]", "[1,1,1]", "[01, 1, 1]", "[1, 1]", "[1, 1, 1, 1]",
		"[-1, 1, 1]", "[1.5, 1, 1]", `["a", 1, 1]`, "[]", "[12345678901, 1, 1]",
	}
	var b strings.Builder
	b.WriteString(`{"traceEvents":[`)
	for i, g := range grids {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":%d,"dur":1,"args":{"correlation":%d,"grid":%s,"block":[128, 1, 1],"registers per thread":32,"blocks per SM":%d.25,"est. achieved occupancy %%":%d}}`, i*10, i+1, g, i, i%3)
	}
	b.WriteString("]}")
	saved := segmentSize
	segmentSize = 256 // several segments: the per-launch values are merged
	defer func() { segmentSize = saved }()
	for _, workers := range []int{1, 4} {
		tr, err := Read(strings.NewReader(b.String()), "t.json", Options{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Validate(); err != nil {
			t.Fatal(err)
		}
		if tr.Events.Len() != len(grids) {
			t.Fatalf("workers=%d: %d events", workers, tr.Events.Len())
		}
		for i, g := range grids {
			if s, ok := tr.ArgStr(i, trace.KeyGrid); !ok || s != g {
				t.Errorf("workers=%d event %d: grid %q, want %q", workers, i, s, g)
			}
			if s, _ := tr.ArgStr(i, trace.KeyBlock); s != "[128, 1, 1]" {
				t.Errorf("workers=%d event %d: block %q", workers, i, s)
			}
			if f, _ := tr.ArgFloat(i, trace.KeyBlocksPerSM); f != float64(i)+0.25 {
				t.Errorf("workers=%d event %d: blocks per SM %v", workers, i, f)
			}
			var keys []string
			for _, a := range tr.Args(i) {
				keys = append(keys, tr.Str(a.Key)+"="+tr.Format(a.Val))
			}
			asJSON := g // Format writes JSON: a grid that is not valid JSON is a string of its text
			if !json.Valid([]byte(g)) {
				asJSON = trace.QuoteJSON(g)
			}
			want := fmt.Sprintf("[grid=%s block=[128, 1, 1] registers per thread=32 blocks per SM=%d.25 est. achieved occupancy %%=%d]", asJSON, i, i%3)
			if got := fmt.Sprint(keys); got != want {
				t.Errorf("workers=%d event %d: args %s, want %s", workers, i, got, want)
			}
		}
		if a := tr.Events.Args; a[0] != a[1] || a[0] != a[2] { // the packed grids
			t.Errorf("workers=%d: argument sets %v: the per-launch values were not lifted", workers, a[:3])
		}
	}
}
