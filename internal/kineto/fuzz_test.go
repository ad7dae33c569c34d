package kineto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// FuzzRead checks the reader never crashes or hangs, and that on valid
// JSON it reads the same complete events as encoding/json (the oracle):
// same names, same timestamps, same string arguments.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		for _, s := range parseTxtar(string(data)) {
			if s.name == "trace.json" {
				f.Add([]byte(s.body))
			}
		}
	}
	f.Add([]byte(`{"traceEvents":[{"ph":"X","name":"a\u00e9\"b","ts":1.5,"dur":2,"args":{"k":"v\\n","n":[1,{"x":null}]}}]}`))
	f.Add([]byte(`[{"name":"x","ts":1e3,"pid":"CPU functions","tid":1,"ph":"X"}]`))
	// A present but empty "ph" is skipped, as the oracle does (issue 12).
	f.Add([]byte(`[{"ph":"","name":"","ts":0}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data), "fuzz", Options{Workers: 1})
		checkParallel(t, data, tr, err)
		if err == nil {
			if verr := tr.Validate(); verr != nil {
				t.Fatalf("model invariants: %v", verr)
			}
		}
		if !json.Valid(data) || bytes.Count(data, []byte(`"traceEvents"`)) > 1 {
			return
		}
		want, ok := oracleEvents(data)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("valid JSON trace refused: %v", err)
		}
		got := modelEvents(tr)
		if len(got) != len(want) {
			t.Fatalf("read %d complete events, encoding/json sees %d\n got: %v\nwant: %v", len(got), len(want), got, want)
		}
		for i := range got {
			if got[i].name != want[i].name || math.Abs(float64(got[i].ts-want[i].ts)) > 1+math.Abs(float64(want[i].ts))*1e-15 {
				t.Fatalf("event %d: got %+v, want %+v", i, got[i], want[i])
			}
			if !slices.Equal(got[i].strArgs, want[i].strArgs) {
				t.Fatalf("event %d string args: got %q, want %q", i, got[i].strArgs, want[i].strArgs)
			}
		}
	})
}

// checkParallel reads data again with workers over 16-byte segments: the
// model must be the one-pass reader's.
func checkParallel(t *testing.T, data []byte, one *trace.Trace, oneErr error) {
	defer func(saved int) { segmentSize = saved }(segmentSize)
	segmentSize = 16
	par, err := Read(bytes.NewReader(data), "fuzz", Options{Workers: 2})
	if (err == nil) != (oneErr == nil) {
		t.Fatalf("parallel read: error %v, one pass: %v", err, oneErr)
	}
	if err == nil && dump(par)+sparseIDs(par) != dump(one)+sparseIDs(one) {
		t.Fatalf("parallel read differs from one pass:\n%s", diff(dump(one)+sparseIDs(one), dump(par)+sparseIDs(par)))
	}
}

type simpleEvent struct {
	name    string
	ts      int64
	strArgs []string // "key=value" for string-valued args, sorted
}

// lifted are the args the model keeps outside the argument set.
var lifted = map[string]bool{
	"External id": true, "external id": true, "correlation": true, "Sequence number": true,
	"Python id": true, "Python parent id": true, "Ev Idx": true, "Record function id": true,
	"Profiler Event Index": true, "Addr": true, "Bytes": true, "Total Allocated": true, "Total Reserved": true,
}

// oracleEvents lists, via encoding/json, the events the reader must turn
// into complete slices: ph "X" (or no ph, with a name) with a string name
// and a numeric ts. ok is false for inputs the comparison does not cover
// (B/E pairs, which the reader merges).
func oracleEvents(data []byte) (evs []simpleEvent, ok bool) {
	var top any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&top) != nil {
		return nil, false
	}
	var list []any
	switch v := top.(type) {
	case []any:
		list = v
	case map[string]any:
		l, isList := v["traceEvents"].([]any)
		if !isList {
			return nil, false
		}
		list = l
	default:
		return nil, false
	}
	for _, item := range list {
		m, isObj := item.(map[string]any)
		if !isObj {
			continue
		}
		ph, hasPh := m["ph"]
		phs, _ := ph.(string)
		if phs == "B" || phs == "E" {
			return nil, false
		}
		name, nameOK := m["name"].(string)
		if !nameOK {
			if _, present := m["name"]; present || hasPh && strings.HasPrefix(phs, "X") {
				return nil, false // non-string names are formatted, not compared
			}
		}
		tsNum, tsOK := m["ts"].(json.Number)
		if hasPh && (phs == "" || phs[0] != 'X') || !tsOK || !nameOK {
			continue
		}
		ts, ok := microsToNanos([]byte(tsNum.String()))
		if !ok {
			return nil, false
		}
		if _, isStr := ph.(string); hasPh && !isStr || ts < -maxAbsTs || ts > maxAbsTs {
			continue
		}
		ev := simpleEvent{name: name, ts: ts}
		if args, isObj := m["args"].(map[string]any); isObj {
			for k, v := range args {
				if s, isStr := v.(string); isStr && !lifted[k] && k != "device" && k != "stream" {
					ev.strArgs = append(ev.strArgs, k+"="+s)
				}
			}
		}
		slices.Sort(ev.strArgs)
		evs = append(evs, ev)
	}
	slices.SortStableFunc(evs, cmpEvent)
	return evs, true
}

func modelEvents(tr *trace.Trace) []simpleEvent {
	var evs []simpleEvent
	ev := &tr.Events
	for i, k := range ev.Kind {
		if k == trace.KindMemory || k == trace.KindInstant || k == trace.KindCounter {
			continue
		}
		e := simpleEvent{name: tr.Name(i), ts: ev.Start[i]}
		for _, a := range tr.Args(i) {
			if a.Val.Kind == trace.ValString {
				e.strArgs = append(e.strArgs, tr.Str(a.Key)+"="+tr.Str(trace.StrID(a.Val.Bits)))
			}
		}
		slices.Sort(e.strArgs)
		evs = append(evs, e)
	}
	slices.SortStableFunc(evs, cmpEvent)
	return evs
}

func cmpEvent(a, b simpleEvent) int {
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	if a.ts != b.ts {
		return int(max(min(a.ts-b.ts, 1), -1))
	}
	return strings.Compare(fmt.Sprint(a.strArgs), fmt.Sprint(b.strArgs))
}
