// Package scenario writes small Kineto traces for tests of the window
// check and the diagnosis: the device-side cases the shared traces do not
// cover (a capture that starts mid-flight, a cold first step, graph
// capture, profiler overhead, ...).
package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Trace is a trace being written. Times are µs; one host thread (tid 1)
// launches onto one stream (device 0, stream 7).
type Trace struct {
	events []map[string]any
	corr   int
}

// Add appends a raw event.
func (s *Trace) Add(e map[string]any) { s.events = append(s.events, e) }

// Host is an event on the host thread.
func (s *Trace) Host(cat, name string, ts, dur float64, args map[string]any) {
	e := map[string]any{"ph": "X", "cat": cat, "name": name, "pid": 100, "tid": 1, "ts": ts, "dur": dur}
	if args != nil {
		e["args"] = args
	}
	s.Add(e)
}

// Step is a ProfilerStep#n annotation.
func (s *Trace) Step(n int, ts, dur float64) {
	s.Host("user_annotation", "ProfilerStep#"+itoa(n), ts, dur, nil)
}

// Op is a cpu_op.
func (s *Trace) Op(name string, ts, dur float64) { s.Host("cpu_op", name, ts, dur, nil) }

// Runtime is a runtime call that launches nothing.
func (s *Trace) Runtime(name string, ts, dur float64) { s.Host("cuda_runtime", name, ts, dur, nil) }

// Launch is a launch call at ts (dur long) whose device event (cat kernel,
// gpu_memcpy, ...) runs [start, start+kdur).
func (s *Trace) Launch(call, cat, kernel string, ts, dur, start, kdur float64) {
	s.corr++
	s.Host("cuda_runtime", call, ts, dur, map[string]any{"correlation": s.corr})
	s.Device(cat, kernel, start, kdur, s.corr)
}

// LaunchLone is a launch call whose kernel runs [start, start+kdur).
func (s *Trace) LaunchLone(ts, dur float64, kernel string, start, kdur float64) {
	s.Launch("cudaLaunchKernel", "kernel", kernel, ts, dur, start, kdur)
}

// Kernel launches a kernel with a 5 µs cudaLaunchKernel.
func (s *Trace) Kernel(name string, ts, start, dur float64) {
	s.Launch("cudaLaunchKernel", "kernel", name, ts, 5, start, dur)
}

// Device is a device event; corr 0: launched before the trace.
func (s *Trace) Device(cat, name string, start, dur float64, corr int) {
	e := map[string]any{"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": start, "dur": dur,
		"args": map[string]any{"device": 0, "stream": 7}}
	if corr > 0 {
		e["args"].(map[string]any)["correlation"] = corr
	} else {
		e["args"].(map[string]any)["correlation"] = 900000 + len(s.events)
	}
	s.Add(e)
}

// Write writes the trace into a temporary directory and returns its path.
func (s *Trace) Write(t testing.TB) string {
	t.Helper()
	doc := map[string]any{
		"schemaVersion":    1,
		"deviceProperties": []map[string]any{{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912, "computeMajor": 9, "computeMinor": 0, "numSms": 132}},
		"traceEvents":      s.events,
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "trace.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// GPUStep writes one step of a GPU-bound loop starting at ts: from
// max(ts, devFrom-20)+10 on (the host may do something else first) the
// host launches n kernels of kdur µs back to back, which the device runs
// in a row; the step ends when the last kernel ends. It returns the step
// end.
func (s *Trace) GPUStep(num int, ts, devFrom float64, n int, kdur float64) float64 {
	dev := max(ts+20, devFrom)
	first := max(ts, devFrom-20) + 10
	for i := range n {
		lt := first + float64(i)*8
		dev = max(dev, lt+6)
		s.Op("aten::mm", lt-1, 7)
		s.Kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", lt, dev, kdur)
		dev += kdur
	}
	s.Step(num, ts, dev-ts)
	return dev
}

// K is one kernel of a round: launched by Op (none when "") and running
// Us µs on the device.
type K struct {
	Op, Kernel string
	Us         float64
}

// Of is a round's kernel.
func Of(op, kernel string, us float64) K { return K{Op: op, Kernel: kernel, Us: us} }

// Rounds writes steps GPU-bound steps of rounds rounds each: a round
// launches ks in order within 30 µs of host time, and the device runs
// every kernel back to back.
func (s *Trace) Rounds(steps, rounds int, ks ...K) {
	end := 0.0
	for n := 1; n <= steps; n++ {
		ts, dev := end, end+20
		for i := range rounds {
			lt := ts + 10 + float64(i)*30
			for j, k := range ks {
				at := lt + float64(j)*30/float64(len(ks))
				if k.Op != "" {
					s.Op(k.Op, at, 8)
				}
				s.Kernel(k.Kernel, at+1, dev, k.Us)
				dev += k.Us
			}
		}
		s.Step(n, ts, dev-ts)
		end = dev
	}
}
