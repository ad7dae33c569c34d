// Package regions reports time per user annotation (record_function
// ranges, Lightning's [pl][profile] actions, Optimizer.step#...) and per
// nn.Module, plus the user metadata the trace carries.
//
// Definitions (version "regions/1"):
//
//   - Wall time: the union of the steps' host spans (the whole trace when it
//     has no ProfilerStep). Annotation times are clipped to it.
//   - Regions: user_annotation events other than ProfilerStep#N, grouped by
//     name. Total: summed (clipped) durations; self: total minus the time of
//     the annotations directly nested in each instance on the same thread,
//     so nested regions do not double-count.
//   - Main thread: the thread of the ProfilerStep events (without steps, the
//     thread with the most annotated time). On it, the self times of all
//     regions plus the "(unannotated)" row add up to the wall time; regions
//     of other threads (DataLoader workers, autograd) overlap it and are
//     listed apart (main_thread false).
//   - Modules: python_function events "nn.Module: X" (with_stack), named by
//     their path of enclosing modules (Net_0.Linear_0). Host time: summed
//     durations; device time: kernels, memcpys and memsets whose launching
//     call ran inside an instance. Both are inclusive of child modules.
//   - Metadata: top-level keys that are not profiler flags, versions or
//     known sections (add_metadata / add_metadata_json entries).
package regions

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/interval"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Definition names the version of the definitions above.
const Definition = "regions/1"

// Unannotated names the row of main-thread time in no region.
const Unannotated = "(unannotated)"

// Region is one annotation name.
type Region struct {
	Name       string  `json:"name"`
	MainThread bool    `json:"main_thread"`
	Calls      int     `json:"calls"`
	TotalUs    float64 `json:"total_us"`
	MeanUs     float64 `json:"mean_us"`
	SelfUs     float64 `json:"self_us"`
	SelfPct    float64 `json:"self_pct"` // of wall time
}

// Module is one nn.Module path.
type Module struct {
	Path     string  `json:"path"`
	Depth    int     `json:"depth"`
	Calls    int     `json:"calls"`
	HostUs   float64 `json:"host_us"`
	DeviceUs float64 `json:"device_us"`
}

// Meta is one user metadata entry.
type Meta struct {
	Key   string `json:"key"`
	Value string `json:"value"` // raw JSON
}

// Result is the regions analysis of one trace.
type Result struct {
	Definition string   `json:"definition"`
	WallUs     float64  `json:"wall_us"`
	Regions    []Region `json:"regions"`
	Modules    []Module `json:"modules"`
	Metadata   []Meta   `json:"metadata"`
}

// knownKeys are the top-level keys the profiler itself writes.
var knownKeys = map[string]bool{
	"schemaVersion": true, "deviceProperties": true, "distributedInfo": true, "baseTimeNanoseconds": true,
	"displayTimeUnit": true, "traceName": true, "trace_id": true, "traceEvents": true,
	"record_shapes": true, "with_stack": true, "profile_memory": true, "with_flops": true, "with_modules": true,
	"cupti_version": true, "cuda_runtime_version": true, "cuda_driver_version": true, "hip_runtime_version": true,
	"roctracer_version": true, "rocprofiler_version": true, "hip_driver_version": true, "experimental_config": true,
}

func isStep(name string) bool { return strings.HasPrefix(name, "ProfilerStep#") }

// Compute builds the region and module tables.
func Compute(t *trace.Trace) *Result {
	ev := &t.Events
	r := &Result{Definition: Definition, Regions: []Region{}, Modules: []Module{}, Metadata: []Meta{}}

	var spans []interval.Span
	for _, s := range t.Steps {
		spans = append(spans, interval.Span{Start: s.Start, End: s.End})
	}
	wall := interval.Of(spans)
	r.WallUs = float64(wall.Total()) / 1e3

	stepName := map[trace.StrID]bool{}
	isAnn := func(i int32) bool {
		if ev.Kind[i] != trace.KindUserAnnotation {
			return false
		}
		v, ok := stepName[ev.Name[i]]
		if !ok {
			v = isStep(t.Str(ev.Name[i]))
			stepName[ev.Name[i]] = v
		}
		return !v
	}
	// Main thread.
	main := trace.TrackID(1<<32 - 1)
	if !t.SyntheticStep && t.Steps[0].Event != trace.None {
		main = ev.Track[t.Steps[0].Event]
	}
	clip := func(i int) int64 { return wall.OverlapLen(interval.Span{Start: ev.Start[i], End: ev.End(i)}) }
	total := make(map[int32]int64)
	child := make(map[int32]int64)
	perTrack := map[trace.TrackID]int64{}
	var anns []int32
	for i := range ev.Kind {
		if !isAnn(int32(i)) {
			continue
		}
		c := clip(i)
		anns = append(anns, int32(i))
		total[int32(i)] = c
		for p := ev.Parent[i]; p != trace.None; p = ev.Parent[p] {
			if isAnn(p) {
				child[p] += c
				break
			}
		}
		if ev.Parent[i] == trace.None || !hasAnnAncestor(ev, int32(i), isAnn) {
			perTrack[ev.Track[i]] += c
		}
	}
	if main == trace.TrackID(1<<32-1) {
		var best int64 = -1
		for tr, v := range perTrack {
			if v > best || v == best && tr < main {
				best, main = v, tr
			}
		}
	}
	type key struct {
		name trace.StrID
		main bool
	}
	rows := map[key]*Region{}
	var mainSelf int64
	for _, i := range anns {
		k := key{ev.Name[i], ev.Track[i] == main}
		row := rows[k]
		if row == nil {
			row = &Region{Name: t.Str(k.name), MainThread: k.main}
			rows[k] = row
		}
		self := max(total[i]-child[i], 0)
		row.Calls++
		row.TotalUs += float64(total[i]) / 1e3
		row.SelfUs += float64(self) / 1e3
		if k.main {
			mainSelf += self
		}
	}
	for _, row := range rows {
		row.MeanUs = row.TotalUs / float64(row.Calls)
		if r.WallUs > 0 {
			row.SelfPct = row.SelfUs * 100 / r.WallUs
		}
		r.Regions = append(r.Regions, *row)
	}
	slices.SortFunc(r.Regions, func(a, b Region) int {
		if a.MainThread != b.MainThread {
			if a.MainThread {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.SelfUs, a.SelfUs); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	un := max(wall.Total()-mainSelf, 0)
	unRow := Region{Name: Unannotated, MainThread: true, TotalUs: float64(un) / 1e3, SelfUs: float64(un) / 1e3}
	if r.WallUs > 0 {
		unRow.SelfPct = unRow.SelfUs * 100 / r.WallUs
	}
	n := 0
	for n < len(r.Regions) && r.Regions[n].MainThread {
		n++
	}
	r.Regions = slices.Insert(r.Regions, n, unRow)

	r.Modules = modules(t)
	for _, kv := range t.Meta.Other {
		if knownKeys[kv.Key] {
			continue
		}
		r.Metadata = append(r.Metadata, Meta{Key: kv.Key, Value: compact(kv.Value)})
	}
	return r
}

func hasAnnAncestor(ev *trace.Events, i int32, isAnn func(int32) bool) bool {
	for p := ev.Parent[i]; p != trace.None; p = ev.Parent[p] {
		if isAnn(p) {
			return true
		}
	}
	return false
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

const modPrefix = "nn.Module: "

// modules aggregates nn.Module python_function events by path.
func modules(t *trace.Trace) []Module {
	ev := &t.Events
	isMod := map[trace.StrID]bool{}
	mod := func(i int32) bool {
		if ev.Kind[i] != trace.KindPythonFunction {
			return false
		}
		v, ok := isMod[ev.Name[i]]
		if !ok {
			v = strings.HasPrefix(t.Str(ev.Name[i]), modPrefix)
			isMod[ev.Name[i]] = v
		}
		return v
	}
	paths := map[int32]string{}
	var pathOf func(i int32) string
	pathOf = func(i int32) string {
		if p, ok := paths[i]; ok {
			return p
		}
		name := strings.TrimPrefix(t.Str(ev.Name[i]), modPrefix)
		p := name
		for a := ev.Parent[i]; a != trace.None; a = ev.Parent[a] {
			if mod(a) {
				p = pathOf(a) + "." + name
				break
			}
		}
		paths[i] = p
		return p
	}
	rows := map[string]*Module{}
	row := func(p string) *Module {
		m := rows[p]
		if m == nil {
			m = &Module{Path: p, Depth: strings.Count(p, ".")}
			rows[p] = m
		}
		return m
	}
	any := false
	for i := range ev.Kind {
		if !mod(int32(i)) {
			continue
		}
		any = true
		m := row(pathOf(int32(i)))
		m.Calls++
		m.HostUs += float64(ev.Dur[i]) / 1e3
	}
	if !any {
		return []Module{}
	}
	for i, k := range ev.Kind {
		if !k.IsDeviceWork() {
			continue
		}
		l := ev.Launch[i]
		if l == trace.None {
			continue
		}
		for a := ev.Parent[l]; a != trace.None; a = ev.Parent[a] {
			if mod(a) {
				row(pathOf(a)).DeviceUs += float64(ev.Dur[i]) / 1e3
			}
		}
	}
	out := make([]Module, 0, len(rows))
	for _, m := range rows {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Module) int { return cmp.Compare(a.Path, b.Path) })
	return out
}
