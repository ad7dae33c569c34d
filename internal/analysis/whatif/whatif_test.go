package whatif_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/whatif"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// step is one synthetic training step: the host runs an op of hostUs
// that launches kernels of kernelUs each, one after the other on stream
// 7, then, with sync, waits for the stream in cudaStreamSynchronize, then
// runs Python for afterUs.
type step struct {
	kernels           int
	hostUs, kernelUs  float64
	sync              bool
	afterUs, loaderUs float64
	// nested: the op runs inside two Python frames of its own span and
	// holds two ops of half its span each, one with a frame inside, as a
	// trace recorded with_stack nests them.
	nested bool
}

// fixture writes steps as a Kineto trace: times are exact, so every
// replay below has a known answer.
func fixture(steps []step) string {
	var ev []string
	add := func(f string, a ...any) { ev = append(ev, fmt.Sprintf(f, a...)) }
	ts, corr := 1000.0, 1
	devFree := 0.0
	for i, s := range steps {
		start := ts
		if s.loaderUs > 0 {
			add(`{"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","pid":1,"tid":1,"ts":%.3f,"dur":%.3f}`, ts, s.loaderUs)
			ts += s.loaderUs
		}
		add(`{"ph":"X","cat":"cpu_op","name":"aten::work","pid":1,"tid":1,"ts":%.3f,"dur":%.3f}`, ts, s.hostUs)
		if s.nested {
			add(`{"ph":"X","cat":"python_function","name":"train.py(12): step","pid":1,"tid":1,"ts":%.3f,"dur":%.3f}`, ts, s.hostUs)
			add(`{"ph":"X","cat":"python_function","name":"nn/module.py(1750): _call_impl","pid":1,"tid":1,"ts":%.3f,"dur":%.3f}`, ts, s.hostUs)
			add(`{"ph":"X","cat":"cpu_op","name":"aten::inner","pid":1,"tid":1,"ts":%.3f,"dur":%.3f}`, ts, s.hostUs/2)
			add(`{"ph":"X","cat":"cpu_op","name":"aten::inner","pid":1,"tid":1,"ts":%.3f,"dur":%.3f}`, ts+s.hostUs/2, s.hostUs/2)
			add(`{"ph":"X","cat":"python_function","name":"model.py(30): forward","pid":1,"tid":1,"ts":%.3f,"dur":%.3f}`, ts+s.hostUs/2+1, s.hostUs/4)
		}
		per := s.hostUs / float64(s.kernels)
		for k := range s.kernels {
			l := ts + float64(k)*per + per/2
			add(`{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%.3f,"dur":1,"args":{"correlation":%d}}`, l, corr)
			ks := math.Max(l+2, devFree)
			add(`{"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":%.3f,"dur":%.3f,"args":{"correlation":%d,"stream":7,"device":0}}`, ks, s.kernelUs, corr)
			devFree = ks + s.kernelUs
			corr++
		}
		ts += s.hostUs
		if s.sync {
			end := math.Max(ts+1, devFree+1)
			add(`{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":1,"ts":%.3f,"dur":%.3f,"args":{"correlation":%d}}`, ts, end-ts, corr)
			add(`{"ph":"X","cat":"cuda_sync","name":"Stream Sync","pid":0,"tid":7,"ts":%.3f,"dur":%.3f,"args":{"correlation":%d,"stream":7,"device":0}}`, ts, end-ts, corr)
			corr++
			ts = end
		}
		ts += s.afterUs
		add(`{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":1,"tid":1,"ts":%.3f,"dur":%.3f}`, i, start, ts-start)
	}
	return `{"traceEvents":[` + strings.Join(ev, ",\n") + `]}`
}

func repeat(s step, n int) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func fix(id string, f func(*whatif.Fix)) whatif.Fix {
	x := whatif.Identity(id, id)
	f(&x)
	return x
}

var (
	kernels2x = fix("kernels", func(f *whatif.Fix) { f.Compute = 0.5 })
	host2x    = fix("host", func(f *whatif.Fix) { f.Host[whatif.Python], f.Host[whatif.Op], f.Host[whatif.Runtime] = 0.5, 0.5, 0.5 })
	noSync    = fix("sync", func(f *whatif.Fix) { f.Syncs = true })
	noLoader  = fix("loader", func(f *whatif.Fix) { f.Host[whatif.Loader] = 0 })
)

func predict(t *testing.T, steps []step, fixes ...whatif.Fix) *whatif.Result {
	t.Helper()
	r := whatif.Build(tracetest.ReadString(t, fixture(steps)), nil).Predict(whatif.Identity("", ""), fixes)
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	if r.BaselineErrorPct > 0.5 {
		t.Fatalf("the unchanged replay (%.1f µs) does not reproduce the trace (%.1f µs)", r.BaselineUs, r.MeasuredUs)
	}
	return r
}

func saving(t *testing.T, r *whatif.Result, id string) float64 {
	t.Helper()
	p, ok := r.Find(id)
	if !ok {
		t.Fatalf("no prediction %s", id)
	}
	return p.SavingPct
}

// The device is the path: the host launches 10 kernels of 100 µs in 100
// µs and runs ahead. Faster kernels shorten the step by what they lose;
// a faster host saves nothing (it must stay silent).
func TestDeviceOnThePath(t *testing.T) {
	r := predict(t, repeat(step{kernels: 10, hostUs: 100, kernelUs: 100}, 8), kernels2x, host2x)
	if s := saving(t, r, "kernels"); s < 40 || s > 52 {
		t.Errorf("kernels 2x faster saves %.1f%%, want about 50%%", s)
	}
	if s := saving(t, r, "host"); s > 2 {
		t.Errorf("a faster host saves %.1f%% of a device-bound step, want ~0", s)
	}
}

// The host is the path: 1 ms of host work launches 10 kernels of 5 µs.
// Faster kernels save nothing (the critical path says so); a faster host
// saves half.
func TestHostOnThePath(t *testing.T) {
	r := predict(t, repeat(step{kernels: 10, hostUs: 1000, kernelUs: 5}, 8), kernels2x, host2x)
	if s := saving(t, r, "kernels"); s > 1 {
		t.Errorf("kernels 2x faster save %.1f%% of a host-bound step, want ~0", s)
	}
	if s := saving(t, r, "host"); s < 45 || s > 51 {
		t.Errorf("host 2x faster saves %.1f%%, want about 50%%", s)
	}
	p, _ := r.Find("kernels")
	if p.ReachPct > 5 {
		t.Errorf("kernels' reach %.0f%%, want ~0: their time is hidden behind the host", p.ReachPct)
	}
}

// A sync per step serialises host and device: 500 µs of host work that
// launches a 500 µs kernel half-way, the wait for it (253 µs), then 500 µs
// of Python. Without the sync the host never waits: 1253 µs -> 1000 µs.
func TestSyncRemoved(t *testing.T) {
	r := predict(t, repeat(step{kernels: 1, hostUs: 500, kernelUs: 500, sync: true, afterUs: 500}, 8), noSync)
	if s := saving(t, r, "sync"); s < 19 || s > 21 {
		t.Errorf("removing the sync saves %.1f%%, want 20%%", s)
	}
	if r.Waits < 0.99 {
		t.Errorf("%.2f waits a step found, want 1", r.Waits)
	}
	// without a sync nothing is saved by removing none
	r = predict(t, repeat(step{kernels: 1, hostUs: 500, kernelUs: 500, afterUs: 500}, 8), noSync)
	if s := saving(t, r, "sync"); s != 0 {
		t.Errorf("no sync in the steps, yet removing syncs saves %.1f%%", s)
	}
}

// DataLoader waits are host time on the path: removing them saves them.
func TestLoaderRemoved(t *testing.T) {
	r := predict(t, repeat(step{kernels: 2, hostUs: 200, kernelUs: 50, loaderUs: 600}, 6), noLoader, kernels2x)
	if s := saving(t, r, "loader"); s < 70 || s > 76 {
		t.Errorf("removing 600 µs of 800 µs of wait saves %.1f%%, want 75%%", s)
	}
	if s := saving(t, r, "kernels"); s > 1 {
		t.Errorf("kernels 2x faster under an input-bound step save %.1f%%", s)
	}
}

// Two fixes that each save little alone save much together when host and
// device take turns (a sync per step, both about equal).
func TestJoin(t *testing.T) {
	r := predict(t, repeat(step{kernels: 4, hostUs: 800, kernelUs: 200, sync: true}, 8), kernels2x, host2x, whatif.Join(kernels2x, host2x))
	a, b, ab := saving(t, r, "kernels"), saving(t, r, "host"), saving(t, r, "kernels+host")
	if ab < a+b-1 {
		t.Errorf("together %.1f%% < %.1f%% + %.1f%%: serialised work adds up", ab, a, b)
	}
}

// Frames and ops nested in an op change no category: the replay with
// them is the replay without them, and its model holds no more segments.
func TestNestedEventsChangeNothing(t *testing.T) {
	s := step{kernels: 4, hostUs: 800, kernelUs: 150, sync: true, afterUs: 300, loaderUs: 100}
	nested := s
	nested.nested = true
	fixes := []whatif.Fix{kernels2x, host2x, noSync, noLoader, whatif.Join(kernels2x, host2x)}
	build := func(st step) (*whatif.Result, int) {
		m := whatif.Build(tracetest.ReadString(t, fixture(repeat(st, 6))), nil)
		return m.Predict(whatif.Identity("", ""), fixes), whatif.Segments(m)
	}
	flat, flatSegs := build(s)
	deep, deepSegs := build(nested)
	if deepSegs != flatSegs {
		t.Errorf("%d segments with nested frames and ops, %d without", deepSegs, flatSegs)
	}
	if flat.Error != "" || deep.Error != "" || math.Abs(flat.BaselineUs-deep.BaselineUs) > 1e-6 {
		t.Fatalf("baseline %.3f µs nested, %.3f µs flat (errors %q %q)", deep.BaselineUs, flat.BaselineUs, deep.Error, flat.Error)
	}
	for i, p := range flat.Predictions {
		if q := deep.Predictions[i]; math.Abs(p.SavingPct-q.SavingPct) > 1e-9 || math.Abs(p.RemovedPct-q.RemovedPct) > 1e-9 {
			t.Errorf("%s: saves %.6f%% (takes out %.6f%%) nested, %.6f%% (%.6f%%) flat", p.Fix, q.SavingPct, q.RemovedPct, p.SavingPct, p.RemovedPct)
		}
	}
}

// realTraces are every trace the repository owns.
func realTraces() []string {
	var out []string
	root := testutil.RepoRoot()
	for _, dir := range []string{"testdata/traces", "testdata/rundir", "testdata/diff"} {
		filepath.Walk(filepath.Join(root, dir), func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && strings.Contains(filepath.Base(p), ".json") && !strings.Contains(p, "expected") &&
				(strings.Contains(p, "trace") || !strings.Contains(p, "rundir") && !strings.Contains(p, "diff")) {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

// On every real trace: the unchanged replay reproduces the measured steps
// (within 1%), no fix saves more than the step or more than it takes out
// plus what waits it drops give back, and a fix that takes nothing out
// saves nothing.
func TestRealTraces(t *testing.T) {
	fixes := []whatif.Fix{kernels2x, host2x, noSync, noLoader,
		fix("copy", func(f *whatif.Fix) { f.Copy, f.Pageable, f.CopyWaits = 0.5, 0.2, true }),
		fix("comm", func(f *whatif.Fix) { f.Comm = 0.5 }),
		fix("fp32", func(f *whatif.Fix) { f.FP32Math = 0.5 }),
		fix("opt", func(f *whatif.Fix) { f.Optimizer = 0.5 })}
	replayed := 0
	for _, p := range realTraces() {
		tr, err := kineto.ReadFile(p, kineto.Options{})
		if err != nil && (tr == nil || tr.Events.Len() == 0) {
			continue
		}
		rel, _ := filepath.Rel(testutil.RepoRoot(), p)
		r := whatif.Build(tr, window.Check(tr, window.Options{}).Kept()).Predict(whatif.Identity("", ""), fixes)
		if r.Error != "" {
			continue
		}
		replayed++
		if r.BaselineErrorPct > 1 {
			t.Errorf("%s: unchanged replay %.0f µs, measured %.0f µs", rel, r.BaselineUs, r.MeasuredUs)
		}
		for _, pr := range r.Predictions {
			if pr.SavingPct < -0.01 || pr.SavingPct > 100 {
				t.Errorf("%s: %s saves %.1f%%", rel, pr.Fix, pr.SavingPct)
			}
			if pr.RemovedPct == 0 && pr.SavingPct > 0.01 {
				t.Errorf("%s: %s takes nothing out but saves %.1f%%", rel, pr.Fix, pr.SavingPct)
			}
			if pr.Fix != "sync" && pr.SavingPct > pr.RemovedPct+0.01 {
				t.Errorf("%s: %s saves %.1f%%, more than the %.1f%% it takes out", rel, pr.Fix, pr.SavingPct, pr.RemovedPct)
			}
		}
	}
	if replayed < 30 {
		t.Errorf("only %d real traces replayed", replayed)
	}
}

// A trace without steps to use gives an error, not a prediction.
func TestNoSteps(t *testing.T) {
	tr := tracetest.ReadString(t, fixture(repeat(step{kernels: 1, hostUs: 10, kernelUs: 10}, 2)))
	r := whatif.Build(tr, []bool{false, false}).Predict(whatif.Identity("", ""), []whatif.Fix{kernels2x})
	if r.Error == "" || len(r.Predictions) != 0 || r.Trusted(10) {
		t.Errorf("no step used, yet %+v", r)
	}
	var _ *trace.Trace = tr
}
