package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
)

type rowT = optable.OpRow

var tensorCore = classify.UsesTensorCores

// finding builds a finding from a rule and the time at stake per step.
func (s *state) finding(id, title string, atStakeUs float64, measured []Evidence, where []Location, change string) Finding {
	r := rule(id)
	if change == "" {
		change = r.Change
	}
	f := Finding{Rule: id, Class: r.Class, Title: title, Measured: measured, Where: where, Change: change,
		AtStakeUs: round(atStakeUs), SavingUs: round(atStakeUs * r.Factor), Confidence: "medium"}
	if s.step > 0 {
		f.AtStakePct = round(100 * atStakeUs / s.step)
		f.SavingPct = round(100 * atStakeUs * r.Factor / s.step)
	}
	if s.d.Verdict.Primary == r.Class {
		f.Confidence = s.d.Verdict.Confidence
	}
	if f.Measured == nil {
		f.Measured = []Evidence{}
	}
	return f
}

func (s *state) emit(f Finding) { s.d.Findings = append(s.d.Findings, f) }

func (s *state) pyLines(lines []Line, n int) []Location {
	var out []Location
	for i, l := range lines {
		if i == n {
			break
		}
		note := "main-thread samples, whole run"
		if s.py.Window {
			note = "main-thread samples in the recorded window"
		}
		out = append(out, Location{Kind: "python", Name: l.Func, File: l.File, Line: l.Line, SharePct: l.Pct, Note: note})
	}
	return out
}

// findings applies every rule and ranks the results.
func (s *state) findings() {
	p := s.p
	S := s.step
	at := func(c Class) float64 { return s.share[c] * S }
	big := func(c Class) bool { return s.share[c] >= p.MinFinding }

	if big(Input) {
		var where []Location
		change := ""
		if s.py != nil {
			where = s.pyLines(s.py.LoaderLines, 2)
		}
		if r := s.in.Run; r != nil {
			for _, l := range r.Loaders {
				nw := "?"
				if l.NumWorkers != nil {
					nw = fmt.Sprint(*l.NumWorkers)
				}
				where = append(where, Location{Kind: "dataloader", Name: l.Dataset, Note: "num_workers=" + nw + " pin_memory=" + ptrStr(l.PinMemory) + " persistent_workers=" + ptrStr(l.PersistentWorkers)})
				switch {
				case l.NumWorkers != nil && *l.NumWorkers == 0:
					n := 4
					if r.Env != nil && r.Env.CPUs > 0 {
						n = min(max(r.Env.CPUs-1, 1), 8)
					}
					change = fmt.Sprintf("the batches load in the main thread (num_workers=0): DataLoader(num_workers=%d, persistent_workers=True%s); or make the dataset's __getitem__ cheaper", n, pinText(s.device))
				case l.NumWorkers != nil:
					change = fmt.Sprintf("%d workers cannot keep up: raise num_workers, prefetch_factor, or make __getitem__ cheaper", *l.NumWorkers)
				}
			}
		}
		if len(where) == 0 {
			where = append(where, Location{Kind: "dataloader", Name: "DataLoader __next__"})
		}
		ms := s.ev[Input]
		if in := s.in.Input; in != nil && in.Calls > 0 && s.device {
			ms = append(ms, Evidence{"device idle during DataLoader wait", in.GPUIdlePct, "%", "input_pipeline"})
		}
		s.emit(s.finding("input.loader", fmt.Sprintf("The step waits %s for data", FormatUs(at(Input))), at(Input), ms, where, change))
	}
	if big(IO) && s.py != nil {
		s.emit(s.finding("io.in-step", fmt.Sprintf("File I/O in the step takes %.0f%% of the main thread", pct(s.py.IOShare)), at(IO), s.ev[IO], s.pyLines(s.py.IOLines, 3), ""))
	}
	hostClass := Host
	if _, ok := s.share[Launch]; ok {
		hostClass = Launch
	}
	if big(hostClass) {
		var where []Location
		if s.py != nil {
			where = s.pyLines(s.py.Hot, 3)
		}
		where = append(where, s.hostWaitFrames()...)
		if hostClass == Launch {
			where = append(where, s.topOps(3, true)...)
			s.emit(s.finding("host.launch", fmt.Sprintf("Tiny kernels: the device idles %.0f%% of the step waiting for launches", pct(s.share[Launch])), at(Launch), s.ev[Launch], where, ""))
		} else {
			title := fmt.Sprintf("The device idles %.0f%% of the step while the host runs Python and framework code", pct(s.share[Host]))
			change := ""
			if !s.device {
				title = fmt.Sprintf("Python between ops takes %.0f%% of the step", pct(s.share[Host]))
				change = "take the Python work out of the step: vectorise it with tensor ops, precompute it, or move it into a Dataset loaded by DataLoader workers"
			}
			s.emit(s.finding("host.python", title, at(Host), s.ev[Host], where, change))
		}
	}
	s.optimizerFinding()
	if big(Sync) {
		var where []Location
		if r := s.in.Run; r != nil {
			for i, ss := range r.SyncSites {
				if i == 3 {
					break
				}
				where = append(where, Location{Kind: "sync-site", Name: ss.Func, File: ss.File, Line: ss.Line, Note: fmt.Sprintf("%d implicit syncs in the window", ss.Count)})
			}
		}
		if sy := s.in.Syncs; sy != nil {
			for _, c := range sy.Causes {
				if len(where) == 3 || c.StallUs <= 0 {
					break
				}
				name := cmp.Or(c.Op, c.TopOp, c.Call)
				call := c.Call
				if c.Copy != "" {
					call += " " + c.Copy + " pageable"
				}
				l := Location{Kind: "op", Name: name, Note: fmt.Sprintf("%d × %s, %s blocked, device stalled %s", c.Count, call, FormatUs(c.BlockedUs), FormatUs(c.StallUs))}
				if len(c.Stack) > 0 {
					l.Note += "; stack: " + c.Stack[0]
				}
				where = append(where, l)
			}
		}
		s.emit(s.finding("sync.blocking", fmt.Sprintf("%.0f blocking syncs per step stall the device", s.syncPS), at(Sync), s.ev[Sync], where, s.syncChange()))
	}
	s.gpuFindings()
	if big(Copy) {
		where, pageable := s.copies()
		change := ""
		if !pageable {
			change = "the copies already come from pinned memory: overlap them with compute on a side stream (non_blocking=True), or keep the data on the device"
		}
		s.emit(s.finding("copy.h2d", fmt.Sprintf("Host-device copies take %.0f%% of the step", pct(s.share[Copy])), at(Copy), s.ev[Copy], where, change))
	}
	if big(Comm) {
		s.emit(s.finding("comm.exposed", fmt.Sprintf("Communication not overlapped with compute takes %.0f%% of the step", pct(s.share[Comm])), at(Comm), s.ev[Comm], s.topOps(3, false, "nccl", "gloo", "all_reduce", "allreduce", "all_gather", "broadcast", "reduce_scatter", "all_to_all"), ""))
	}
	if ev, ok := s.ev[Memory]; ok && len(ev) > 0 {
		s.emit(s.finding("memory.capacity", "Device memory is near capacity", 0, ev, nil, ""))
	}
	if big(CPUCompute) {
		var where []Location
		if s.py != nil {
			where = s.pyLines(s.py.Hot, 2)
		}
		where = append(where, s.topOps(3, true)...)
		change := ""
		ms := s.ev[CPUCompute]
		if r := s.in.Run; r != nil && r.Env != nil && r.Env.NumThreads > 0 {
			ms = append(ms, Evidence{"torch intra-op threads", float64(r.Env.NumThreads), "", "env"}, Evidence{"usable CPUs", float64(r.Env.CPUs), "", "env"})
			if r.Env.NumThreads < r.Env.CPUs {
				change = fmt.Sprintf("torch uses %d of %d CPUs: torch.set_num_threads(%d) (or unset OMP_NUM_THREADS); then bf16/channels_last, torch.compile or an accelerator", r.Env.NumThreads, r.Env.CPUs, r.Env.CPUs)
			}
		}
		s.emit(s.finding("cpu.native", fmt.Sprintf("Native ops take %.0f%% of the step on the CPU", pct(s.share[CPUCompute])), at(CPUCompute), ms, where, change))
	}
	s.rank()
}

func (s *state) rank() {
	slices.SortStableFunc(s.d.Findings, func(a, b Finding) int {
		// the verdict's own finding leads among equal savings
		return cmp.Or(cmp.Compare(b.SavingUs, a.SavingUs), cmp.Compare(b.AtStakeUs, a.AtStakeUs))
	})
	// a finding of the primary class with an estimate of 0 still goes
	// before findings that save less than a tenth of what it has at stake
	for i, f := range s.d.Findings {
		if f.Class == s.d.Verdict.Primary && f.SavingUs == 0 && i > 0 {
			j := i
			for j > 0 && s.d.Findings[j-1].SavingUs < f.AtStakeUs/10 {
				j--
			}
			if j < i {
				s.d.Findings = slices.Insert(slices.Delete(s.d.Findings, i, i+1), j, f)
			}
			break
		}
	}
}

// syncFixes maps what synchronises (the op that issued the sync, or the
// call itself) to the change that removes it, most specific first.
var syncFixes = []struct {
	ops    []string // op or call name fragments, lower case
	change string
}{
	{[]string{"_local_scalar_dense", "aten::item", "aten::is_nonzero"}, "`.item()` / float(t) / `if t:` / print(t) reads a device value on the host each step: accumulate on the device (e.g. a running loss tensor) and read it every N steps"},
	{[]string{"nonzero", "masked_select", "unique", "aten::index", "boolean"}, "data-dependent shapes (nonzero, boolean-mask indexing, unique) wait for the device to size their output: use torch.where or fixed-size masks"},
	{[]string{"cudafree", "hipfree", "empty_cache"}, "the caching allocator returns memory every step (torch.cuda.empty_cache() in the loop, or allocation retries near capacity): remove empty_cache() from the loop, or make room (smaller batch, expandable_segments)"},
	{[]string{"cudadevicesynchronize", "hipdevicesynchronize"}, "torch.cuda.synchronize() in the loop (often timing code): remove it, or time with torch.cuda.Event(enable_timing=True) read after the loop"},
}

// syncChange names what actually synchronises, from the sync causes and
// the copies' host memory kind; "" keeps the rule's generic change.
func (s *state) syncChange() string {
	sy := s.in.Syncs
	if sy == nil || len(sy.Causes) == 0 {
		return ""
	}
	top := sy.Causes[0]
	what := strings.ToLower(top.Op + " " + top.TopOp + " " + top.Call)
	for _, f := range syncFixes {
		if classify.ContainsAny(what, f.ops) {
			return f.change
		}
	}
	switch {
	case top.Copy == classify.HtoD.String():
		return "host-to-device copies from pageable memory block the host: DataLoader(pin_memory=True) or tensor.pin_memory(), then .to(device, non_blocking=True)"
	case top.Copy != "" || classify.ContainsAny(what, []string{"copy_", "_to_copy", "aten::to"}):
		return "tensor.cpu() / .to(\"cpu\") / .numpy() / .tolist() in the loop copies to the host and waits: keep the values on the device, or copy into a pinned buffer with non_blocking=True and read it a step later"
	}
	return ""
}

func ptrStr[T any](p *T) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}

func pinText(device bool) string {
	if device {
		return ", pin_memory=True"
	}
	return ""
}

// hostWaitFrames names the Python frames and ops running during the
// largest host-wait gaps (idle analysis).
func (s *state) hostWaitFrames() []Location {
	id := s.in.Idle
	if id == nil {
		return nil
	}
	// ops the sync finding already names were blocked, not busy
	syncing := map[string]bool{}
	if sy := s.in.Syncs; sy != nil && s.share[Sync] > 0 {
		for _, c := range sy.Causes {
			syncing[c.Op], syncing[c.TopOp] = true, true
		}
	}
	agg := map[string]float64{}
	kind := map[string]string{}
	for _, g := range id.TopHostWaits {
		for _, f := range g.Ops {
			if (f.Kind == "python_function" || f.Kind == "cpu_op") && !syncing[f.Name] {
				agg[f.Name] += f.Us
				kind[f.Name] = f.Kind
			}
		}
	}
	var names []string
	for n := range agg {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(agg[b], agg[a]), cmp.Compare(a, b)) })
	var out []Location
	for _, n := range names {
		if len(out) == 2 {
			break
		}
		k := "op"
		if kind[n] == "python_function" {
			k = "python"
		}
		out = append(out, Location{Kind: k, Name: n, Note: fmt.Sprintf("ran %s during the largest host-wait gaps", FormatUs(agg[n]))})
	}
	return out
}

// topOps returns the ops with the most host self time (byCalls: most
// calls), optionally only those whose name contains one of filter.
func (s *state) topOps(n int, selfTime bool, filter ...string) []Location {
	t := s.in.Ops
	if t == nil {
		return nil
	}
	rows := slices.Clone(t.Rows)
	if selfTime {
		slices.SortFunc(rows, func(a, b rowT) int { return cmp.Compare(b.HostSelfUs, a.HostSelfUs) })
	}
	var out []Location
	for _, r := range rows {
		if len(out) == n {
			break
		}
		if isAnnotation(r.Name) && len(filter) == 0 {
			continue
		}
		if len(filter) > 0 && !classify.ContainsAny(strings.ToLower(r.Name), filter) {
			continue
		}
		out = append(out, Location{Kind: "op", Name: r.Name, Note: fmt.Sprintf("%d calls, host self %s, total %s", r.Calls, FormatUs(r.HostSelfUs), FormatUs(r.HostTotalUs))})
	}
	return out
}

func isAnnotation(name string) bool {
	return strings.HasPrefix(name, "ProfilerStep") || strings.HasPrefix(name, "enumerate(DataLoader)") ||
		strings.HasPrefix(name, "Optimizer.") || strings.HasPrefix(name, "##") || strings.Contains(name, "#") && !strings.HasPrefix(name, "aten::")
}

// optimizerFinding: the optimizer step's share of the step (regions).
func (s *state) optimizerFinding() {
	rg := s.in.Regions
	if rg == nil || !s.device || s.steps == 0 {
		return
	}
	for _, r := range rg.Regions {
		if !strings.HasPrefix(r.Name, "Optimizer.step#") {
			continue
		}
		per := r.TotalUs / float64(max(r.Calls, 1))
		if per/s.step < s.p.OptimizerShare {
			continue
		}
		s.emit(s.finding("host.optimizer", fmt.Sprintf("%s takes %.0f%% of the step", r.Name, 100*per/s.step), per,
			[]Evidence{{"optimizer step per call", per, "us", "regions"}, {"calls", float64(r.Calls), "", "regions"}},
			[]Location{{Kind: "op", Name: r.Name}}, ""))
		return
	}
}

func (s *state) gpuFindings() {
	if !s.device || s.share[GPUCompute] < s.p.MinFinding {
		return
	}
	kt := s.in.Kernels
	var kernelUs, gemmUs, nonTC, convUs float64
	var nonTCRows []Location
	if kt != nil {
		kernelUs = kt.TotalUs
		for _, r := range kt.Rows {
			if !isDeviceWork(r.Name) {
				continue
			}
			if isGEMM(r.Name) {
				gemmUs += r.TotalUs
				if !tensorCore(r.Name) {
					nonTC += r.TotalUs
					if len(nonTCRows) < 3 {
						nonTCRows = append(nonTCRows, Location{Kind: "kernel", Name: r.Name, SharePct: round(r.TotalPct), Note: "no tensor cores; launched by " + cmp.Or(r.TopOp, "?")})
					}
				}
			}
			if isConv(r.Name) {
				convUs += r.TotalUs
			}
		}
	}
	perStep := func(us float64) float64 {
		if kernelUs == 0 {
			return 0
		}
		return us / kernelUs * s.avg.KernelUs
	}
	if kernelUs > 0 && nonTC/kernelUs >= s.p.NonTensorCoreGEMM {
		change := ""
		if cc := s.capability(); cc != "" && cc < "8" {
			change = fmt.Sprintf("compute capability %s has no bf16/TF32 tensor cores: torch.autocast(\"cuda\", dtype=torch.float16) with torch.amp.GradScaler", cc)
		}
		ms := []Evidence{{"matmul/conv kernel time without tensor cores", 100 * nonTC / kernelUs, "% of kernel time", "kernels"},
			{"matmul/conv kernel time", 100 * gemmUs / kernelUs, "% of kernel time", "kernels"}}
		if r := s.in.Run; r != nil && r.Env != nil {
			if v, ok := r.Env.Flags["float32_matmul_precision"]; ok {
				ms = append(ms, Evidence{"float32_matmul_precision=" + fmt.Sprint(v), 0, "", "env"})
			}
		}
		s.emit(s.finding("gpu.precision", fmt.Sprintf("Matmuls/convolutions run without tensor cores (%.0f%% of kernel time)", 100*nonTC/kernelUs), perStep(nonTC), ms, nonTCRows, change))
	}
	if r := s.in.Run; r != nil && r.Env != nil && kernelUs > 0 && convUs/kernelUs >= s.p.ConvShare {
		if v, ok := r.Env.Flags["cudnn_benchmark"].(bool); ok && !v {
			s.emit(s.finding("gpu.cudnn-benchmark", fmt.Sprintf("Convolutions (%.0f%% of kernel time) with cudnn.benchmark off", 100*convUs/kernelUs), perStep(convUs),
				[]Evidence{{"convolution kernel time", 100 * convUs / kernelUs, "% of kernel time", "kernels"}}, nil, ""))
		}
	}
	var where []Location
	if kt != nil {
		for _, r := range kt.Rows {
			if len(where) == 3 {
				break
			}
			if !isDeviceWork(r.Name) {
				continue
			}
			tc := "no tensor cores"
			if tensorCore(r.Name) {
				tc = "tensor cores"
			}
			where = append(where, Location{Kind: "kernel", Name: r.Name, SharePct: round(r.TotalPct), Note: tc + "; launched by " + cmp.Or(r.TopOp, "?")})
		}
	}
	s.emit(s.finding("gpu.kernels", fmt.Sprintf("Device kernels take %.0f%% of the step", pct(s.share[GPUCompute])), s.share[GPUCompute]*s.step, s.ev[GPUCompute], where, ""))
	s.attentionFinding(perStep)
	s.layoutFinding(kernelUs, convUs, perStep)
}

// attentionFinding: attention computed as softmax(q @ k.T) @ v, unfused:
// softmax and batched-matmul ops take device time and no fused attention
// op runs.
func (s *state) attentionFinding(perStep func(float64) float64) {
	t := s.in.Ops
	if t == nil || t.DevSelfUs <= 0 {
		return
	}
	var softmax, bmm float64
	var where []Location
	for _, r := range t.Rows {
		n := strings.ToLower(r.Name)
		switch {
		case classify.ContainsAny(n, fusedAttention):
			return
		case strings.Contains(n, "softmax") && !strings.Contains(n, "log_softmax") && !strings.Contains(n, "backward"):
			softmax += r.DeviceSelfUs
		case n == "aten::bmm" || n == "aten::baddbmm":
			bmm += r.DeviceSelfUs
		default:
			continue
		}
		where = append(where, Location{Kind: "op", Name: r.Name, Note: fmt.Sprintf("%d calls, device %s", r.Calls, FormatUs(r.DeviceSelfUs))})
	}
	if softmax <= 0 || bmm <= 0 || (softmax+bmm)/t.DevSelfUs < s.p.AttentionShare {
		return
	}
	kt := s.in.Kernels
	if kt == nil || kt.TotalUs <= 0 {
		return
	}
	share := (softmax + bmm) / t.DevSelfUs
	s.emit(s.finding("gpu.attention", fmt.Sprintf("Attention runs unfused: softmax and batched matmuls take %.0f%% of device time", 100*share),
		perStep(share*kt.TotalUs), []Evidence{{"softmax + bmm device time", 100 * share, "% of device time", "operators"}}, where, ""))
}

// layoutFinding: convolutions on NCHW tensors make cuDNN convert layouts
// around its tensor-core kernels; channels_last removes the conversions.
func (s *state) layoutFinding(kernelUs, convUs float64, perStep func(float64) float64) {
	kt := s.in.Kernels
	if kt == nil || kernelUs <= 0 || convUs/kernelUs < s.p.ConvShare {
		return
	}
	var conv float64
	var where []Location
	for _, r := range kt.Rows {
		if classify.ContainsAny(strings.ToLower(r.Name), layoutConversions) {
			conv += r.TotalUs
			if len(where) < 3 {
				where = append(where, Location{Kind: "kernel", Name: r.Name, SharePct: round(r.TotalPct), Note: "launched by " + cmp.Or(r.TopOp, "?")})
			}
		}
	}
	if conv/kernelUs < s.p.LayoutShare {
		return
	}
	s.emit(s.finding("gpu.channels-last", fmt.Sprintf("Layout conversions around convolutions take %.0f%% of kernel time", 100*conv/kernelUs), perStep(conv),
		[]Evidence{{"NCHW<->NHWC conversion kernels", 100 * conv / kernelUs, "% of kernel time", "kernels"},
			{"convolution kernels", 100 * convUs / kernelUs, "% of kernel time", "kernels"}}, where, ""))
}

func (s *state) capability() string {
	if g := s.in.GPU; g != nil {
		for _, d := range g.Devices {
			if d.ComputeCapability != "" {
				return d.ComputeCapability
			}
		}
	}
	if r := s.in.Run; r != nil && r.Env != nil && len(r.Env.Devices) > 0 {
		return r.Env.Devices[0].Capability
	}
	return ""
}

// copies lists memcpy directions and whether pageable host memory is used.
func (s *state) copies() (where []Location, pageable bool) {
	g := s.in.GPU
	if g == nil {
		return nil, false
	}
	for _, d := range g.Devices {
		for _, m := range d.Memcpy {
			if m.HostMemory == "pageable" {
				pageable = true
			}
			if m.TimeUs <= 0 {
				continue
			}
			where = append(where, Location{Kind: "memcpy", Name: strings.TrimSpace(m.Direction + " " + m.HostMemory),
				Note: fmt.Sprintf("%d copies, %.1f MB, %s, %.1f GB/s", m.Count, float64(m.Bytes)/1e6, FormatUs(m.TimeUs), m.BandwidthGBps)})
		}
	}
	if len(where) > 3 {
		where = where[:3]
	}
	return where, pageable
}
