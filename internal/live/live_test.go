package live

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// snap is a snapshot of n steps of dur seconds each (the last one slow),
// as the agent writes it.
func snap(t *testing.T, tag string, n int, dur float64, cuda bool, ended bool) *Snapshot {
	t.Helper()
	var rows [][]any
	end := 1.0
	for i := 1; i <= n; i++ {
		d := dur
		if i == n {
			d = 3 * dur
		}
		end += d
		rss := 500<<20 + float64(i)*(64<<10)
		var c any
		if cuda {
			c = float64(2<<30) + float64(i)*(2<<20) // +2 MiB a step
		}
		// on a CPU 70% of the step, waiting for one 5%; the data wait,
		// a tenth, and the other 15% blocked. The sampler saw Python 0.2
		// and native code 0.5 of it on the CPU; blocked, the device 0.02,
		// collectives 0.05 and otherwise 0.18 (the data wait's 0.1 of it
		// included)
		rows = append(rows, []any{i, end, d, d / 10, 0.0, rss, c, 0.7 * d, 0.05 * d, 32,
			0.2 * d, 0.5 * d, 0.02 * d, 0.05 * d, 0.18 * d})
	}
	state := "recording"
	if ended {
		state = "ended"
	}
	b, _ := json.Marshal(map[string]any{"format": Format, "tag": tag, "pid": 7, "time": 1.7e9, "uptime_s": end,
		"step": n, "state": state, "window": 0, "ended": ended, "steps": rows})
	s, err := Parse(tag+".json", b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFrameOneRank(t *testing.T) {
	v := Build("train.py --steps 100", []*Snapshot{snap(t, "rank0", 60, 0.010, true, false)})
	r := v.Ranks[0]
	if r.Step != 60 || r.Steps != 60 || r.NowS != 0.030 || r.MedianS != 0.010 || r.P90S != 0.010 {
		t.Errorf("rank %+v", r)
	}
	if len(r.Recent) != SparkSteps || r.BreakdownN != BreakdownSteps {
		t.Errorf("recent %d, breakdown over %d steps", len(r.Recent), r.BreakdownN)
	}
	// each step waited a tenth of itself for data, and no GC
	if d := r.DataWait - 0.1; d > 1e-9 || d < -1e-9 || r.GC != 0 {
		t.Errorf("data wait %v, GC %v", r.DataWait, r.GC)
	}
	testutil.Compare(t, "frame-one.txt", []byte(strings.Join(Frame(v, 100), "\n")+"\n"))
	testutil.Compare(t, "line-one.txt", []byte(Line(v)+"\n"))
}

// Several ranks: one row each, the one with the highest median marked.
func TestFrameRanks(t *testing.T) {
	v := Build("torchrun train.py", []*Snapshot{
		snap(t, "rank1", 40, 0.020, false, false),
		snap(t, "rank0", 41, 0.010, false, false),
	})
	if v.Ranks[0].Tag != "rank0" || v.Ranks[0].Slowest || !v.Ranks[1].Slowest {
		t.Fatalf("ranks %+v", v.Ranks)
	}
	testutil.Compare(t, "frame-ranks.txt", []byte(strings.Join(Frame(v, 200), "\n")+"\n"))
	if l := Line(v); !strings.Contains(l, "rank1 step 40") || !strings.HasSuffix(l, "(slowest)") {
		t.Errorf("line %q", l)
	}
}

// More ranks than fit: the slowest rows, in tag order, and a count of
// the others.
func TestFrameManyRanks(t *testing.T) {
	var snaps []*Snapshot
	for i := range 12 {
		snaps = append(snaps, snap(t, fmt.Sprintf("rank%02d", i), 10, 0.001*float64(1+i%6), false, false))
	}
	lines := Frame(Build("", snaps), 200)
	var tags []string
	for _, l := range lines[1 : 1+MaxRankRows] {
		tags = append(tags, strings.Fields(strings.TrimPrefix(l, "▶"))[0])
	}
	// medians 1..6 ms by i%6: the two 1 ms and two 2 ms ranks are left out
	if got := strings.Join(tags, " "); got != "rank02 rank03 rank04 rank05 rank08 rank09 rank10 rank11" {
		t.Errorf("rows %s", got)
	}
	if lines[1+MaxRankRows] != "  … and 4 more ranks with a lower median" || !strings.HasPrefix(lines[2+MaxRankRows], "slowest, rank05,") ||
		!strings.HasPrefix(lines[len(lines)-1], "rank05: cause so far (provisional): undetermined: too few steps yet") {
		t.Errorf("frame:\n%s", strings.Join(lines, "\n"))
	}
}

// One rank is not "the slowest"; equal steps draw a flat sparkline.
func TestNoSlowestAlone(t *testing.T) {
	v := Build("", []*Snapshot{snap(t, "rank0", 5, 0.01, false, false)})
	if v.Ranks[0].Slowest {
		t.Error("a lone rank marked slowest")
	}
	if got := Sparkline([]float64{1, 1.01, 1}); got != "▄▄▄" {
		t.Errorf("flat sparkline %q", got)
	}
	if got := Sparkline([]float64{1, 2, 3}); got != "▁▅█" {
		t.Errorf("sparkline %q", got)
	}
	for per, want := range map[float64]string{0: "- steps/s", 9.731: "9.73 steps/s", 2345.6: "2346 steps/s"} {
		if got := rate(Rank{Rate: per}); got != want {
			t.Errorf("rate %v: %q, want %q", per, got, want)
		}
	}
	// memory that moved less than 1 MiB over the steps is steady
	if s := memory(v.Ranks[0]); !strings.Contains(s, "steady") || strings.Contains(s, "CUDA") {
		t.Errorf("memory %q", s)
	}
}

// Names from the program and its files cannot reach the terminal as
// escape sequences, and the frame fits the width.
func TestFrameEscapesAndClips(t *testing.T) {
	s := snap(t, "rank0", 3, 0.01, false, false)
	s.Tag = "rank\x1b[2J0"
	s.State = "odd\x07"
	v := Build("evil\x1b]0;title\x07.py", []*Snapshot{s})
	for _, l := range append(Frame(v, 30), Line(v)) {
		if strings.ContainsAny(l, "\x1b\x07") {
			t.Errorf("control byte in %q", l)
		}
	}
	for _, l := range Frame(v, 30) {
		if n := len([]rune(l)); n > 29 {
			t.Errorf("%d runes > 29: %q", n, l)
		}
	}
}

// A step source that switched numbers steps from 1 again: the earlier
// steps are not this run's.
func TestBuildAfterStepSourceSwitch(t *testing.T) {
	const unmeasured = "null,null,null,null,null,null,null,null,null,null"
	b := []byte(`{"format":3,"tag":"rank0","step":2,"state":"waiting","steps":[` +
		`[7,1,0.5,0,0,` + unmeasured + `],[8,1.5,0.5,0,0,` + unmeasured + `],[1,2,0.01,0,0,` + unmeasured + `],[2,2.01,0.01,0,0,` + unmeasured + `]]}`)
	s, err := Parse("rank0.json", b)
	if err != nil {
		t.Fatal(err)
	}
	r := Build("", []*Snapshot{s}).Ranks[0]
	if r.Steps != 2 || r.MedianS != 0.01 || r.RSS != nil {
		t.Errorf("rank %+v", r)
	}
}

func TestParseErrors(t *testing.T) {
	for name, b := range map[string]string{
		"not json":        `{`,
		"format":          `{"format":2}`,
		"short row":       `{"format":3,"steps":[[1,2,3]]}`,
		"format 2's row":  `{"format":3,"steps":[[1,2,3,0,0,null,null,null,null,null]]}`,
		"negative":        `{"format":3,"steps":[[1,2,-3,0,0,null,null,null,null,null,null,null,null,null,null]]}`,
		"null column":     `{"format":3,"steps":[[1,null,3,0,0,null,null,null,null,null,null,null,null,null,null]]}`,
		"negative cpu":    `{"format":3,"steps":[[1,2,3,0,0,null,null,-1,0,null,null,null,null,null,null]]}`,
		"negative python": `{"format":3,"steps":[[1,2,3,0,0,null,null,1,0,null,-1,0,0,0,0]]}`,
		"split in part":   `{"format":3,"steps":[[1,2,3,0,0,null,null,1,0,null,1,null,0,0,0]]}`,
	} {
		if _, err := Parse("rank0.json", []byte(b)); err == nil || !strings.Contains(err.Error(), "rank0.json") {
			t.Errorf("%s: error %v, want one naming the file", name, err)
		}
	}
}

// The event stream sends each new view once and "done" when the report
// is in; / is then the report.
func TestServer(t *testing.T) {
	s := NewServer(true)
	ts := httptest.NewServer(s)
	defer ts.Close()
	res, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), "EventSource") || res.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("live page: %.200s", body)
	}
	res, err = http.Get(ts.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		ev := ""
		for sc.Scan() {
			switch l := sc.Text(); {
			case strings.HasPrefix(l, "event: "):
				ev = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				events <- ev + " " + strings.TrimPrefix(l, "data: ")
			}
		}
		close(events)
	}()
	next := func() string {
		select {
		case e := <-events:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event in 10 s")
		}
		return ""
	}
	if e := next(); !strings.HasPrefix(e, `view {"title":""`) {
		t.Fatalf("first event %q", e)
	}
	step := func() int {
		e := next()
		var v View
		if err := json.Unmarshal([]byte(strings.TrimPrefix(e, "view ")), &v); err != nil || len(v.Ranks) != 1 {
			t.Fatalf("event %q: %v", e, err)
		}
		return v.Ranks[0].Step
	}
	s.Publish(Build("a.py", []*Snapshot{snap(t, "rank0", 5, 0.01, false, false)}))
	if n := step(); n != 5 {
		t.Errorf("step %d, want 5", n)
	}
	s.Publish(Build("a.py", []*Snapshot{snap(t, "rank0", 5, 0.01, false, false)})) // unchanged: not sent again
	s.Publish(Build("a.py", []*Snapshot{snap(t, "rank0", 6, 0.01, false, false)}))
	if n := step(); n != 6 {
		t.Errorf("step %d, want 6", n)
	}
	dir := t.TempDir()
	html := filepath.Join(dir, "report.html")
	if err := os.WriteFile(html, []byte("<p>the report</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Finish(html, filepath.Join(dir, "report.txt"))
	if e := next(); e != "done {}" {
		t.Errorf("after Finish: %q", e)
	}
	res2, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res2.Body)
	res2.Body.Close()
	if string(body) != "<p>the report</p>" {
		t.Errorf("after Finish / is %q", body)
	}
}

// No HTML report (no trace): the text one; bound to loopback, another
// Host is refused.
func TestServerTextReportAndHost(t *testing.T) {
	dir := t.TempDir()
	txt := filepath.Join(dir, "report.txt")
	_ = os.WriteFile(txt, []byte("text report\n"), 0o644)
	s := NewServer(true)
	s.Finish(filepath.Join(dir, "report.html"), txt)
	for _, c := range []struct {
		host string
		code int
		body string
	}{{"127.0.0.1:8080", 200, "text report\n"}, {"evil.example:8080", 403, "forbidden host\n"}} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = c.host
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != c.code || w.Body.String() != c.body {
			t.Errorf("Host %s: %d %q", c.host, w.Code, w.Body.String())
		}
	}
}
