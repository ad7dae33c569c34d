package kineto

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Fixtures are txtar-like files: "-- trace.json --" holds the input and
// "-- expect --" a readable dump of the model it must produce (see dump).

type section struct{ name, body string }

func parseTxtar(data string) []section {
	var out []section
	for _, line := range strings.SplitAfter(data, "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(strings.TrimRight(line, "\n"), " --") {
			out = append(out, section{name: strings.TrimSuffix(strings.TrimPrefix(strings.TrimRight(line, "\n"), "-- "), " --")})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].body += line
		}
	}
	return out
}

func formatTxtar(secs []section) string {
	var b strings.Builder
	for _, s := range secs {
		if s.body != "" && !strings.HasSuffix(s.body, "\n") {
			s.body += "\n"
		}
		fmt.Fprintf(&b, "-- %s --\n%s", s.name, s.body)
	}
	return b.String()
}

func link(v int32) string {
	if v == trace.None {
		return "-"
	}
	return fmt.Sprint(v)
}

// dump renders the model in a stable, readable text form.
// sparseIDs writes the ids few events carry, which the fixtures' expected
// dumps leave out, for the comparisons of parallel and one-pass reads.
func sparseIDs(t *trace.Trace) string {
	var b strings.Builder
	ev := &t.Events
	for e, v := range ev.SeqNum.All() {
		fmt.Fprintf(&b, "seq event=%d %d\n", e, v)
	}
	for e, py := range ev.Py.All() {
		fmt.Fprintf(&b, "py event=%d id=%d parent=%d\n", e, py.ID, py.Parent)
	}
	for i := range ev.Len() {
		fmt.Fprintf(&b, "cat event=%d %q\n", i, t.Str(ev.Cat(i)))
	}
	return b.String()
}

func dump(t *trace.Trace) string {
	var b strings.Builder
	m := &t.Meta
	fmt.Fprintf(&b, "meta base_ns=%d legacy=%v devices=%d", m.BaseTimeNs, m.Legacy, len(m.Devices))
	if d := m.Distributed; d != nil {
		fmt.Fprintf(&b, " rank=%d/%d(%v)", d.Rank, d.WorldSize, d.HasRank)
	}
	b.WriteString("\n")
	for _, kv := range m.Other {
		fmt.Fprintf(&b, "meta %s=%s\n", kv.Key, kv.Value)
	}
	for i, tr := range t.Tracks {
		fmt.Fprintf(&b, "track %d pid=%d(%q) tid=%d(%q) device=%d stream=%d process=%q thread=%q\n",
			i, tr.Pid, tr.PidLabel, tr.Tid, tr.TidLabel, tr.Device, tr.Stream, tr.ProcessName, tr.ThreadName)
	}
	ev := &t.Events
	for i := range ev.Len() {
		fmt.Fprintf(&b, "event %d %s %q track=%d start=%d dur=%d", i, ev.Kind[i], t.Name(i), ev.Track[i], ev.Start[i], ev.Dur[i])
		if v := ev.ExternalID.Get(i); v != 0 {
			fmt.Fprintf(&b, " ext=%d", v)
		}
		if v := ev.Correlation.Get(i); v != 0 {
			fmt.Fprintf(&b, " corr=%d", v)
		}
		fmt.Fprintf(&b, " parent=%s launch=%s op=%s step=%s", link(ev.Parent[i]), link(ev.Launch(i)), link(ev.Op(i)), link(ev.Step[i]))
		for _, a := range t.Args(i) {
			fmt.Fprintf(&b, " %q=%s", t.Str(a.Key), t.Format(a.Val))
		}
		b.WriteString("\n")
	}
	for _, f := range t.Flows {
		fmt.Fprintf(&b, "flow %c id=%d cat=%q track=%d ts=%d event=%s\n", f.Phase, f.ID, t.Str(f.Cat), f.Track, f.Ts, link(f.Event))
	}
	for _, mr := range t.Memory {
		fmt.Fprintf(&b, "memory event=%d ts=%d device=%d/%d addr=%d bytes=%d allocated=%d reserved=%d\n",
			mr.Event, t.Events.Start[mr.Event], mr.DeviceType, mr.DeviceID, mr.Addr, mr.Bytes, mr.TotalAllocated, mr.TotalReserved)
	}
	for _, s := range t.Steps {
		fmt.Fprintf(&b, "step #%d event=%s start=%d end=%d device_end=%d synthetic=%v\n", s.Num, link(s.Event), s.Start, s.End, s.DeviceEnd, t.SyntheticStep)
	}
	for _, p := range t.Problems.List {
		fmt.Fprintf(&b, "problem %s fatal=%v\n", p, p.Fatal)
	}
	return b.String()
}

func TestFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txtar")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			secs := parseTxtar(string(data))
			var input string
			expect := -1
			for i, s := range secs {
				switch s.name {
				case "trace.json":
					input = s.body
				case "expect":
					expect = i
				}
			}
			var got string
			tr, err := Read(strings.NewReader(input), "trace.json", Options{})
			if err != nil {
				got = "error " + err.Error() + "\n"
			} else {
				got = dump(tr)
				if err := tr.Validate(); err != nil {
					t.Error(err)
				}
			}
			if *testutil.Update { // rewrite the -- expect -- section
				if expect < 0 {
					secs = append(secs, section{name: "expect"})
					expect = len(secs) - 1
				}
				secs[expect].body = got
				if err := os.WriteFile(file, []byte(formatTxtar(secs)), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if expect < 0 {
				t.Fatal("fixture has no -- expect -- section (run with -update)")
			}
			if want := secs[expect].body; got != want {
				t.Errorf("model differs from -- expect --\n%s", diff(want, got))
			}
		})
	}
}

// diff shows the first differing lines.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b bytes.Buffer
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d\n  want: %s\n  got:  %s\n", i+1, wl, gl)
			if b.Len() > 2000 {
				break
			}
		}
	}
	return b.String()
}
