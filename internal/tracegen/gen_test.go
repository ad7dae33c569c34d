package tracegen

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// event is one traceEvents entry as the tests read it back.
type event struct {
	Ph   string          `json:"ph"`
	Cat  *string         `json:"cat"`
	Name string          `json:"name"`
	Pid  json.RawMessage `json:"pid"`
	Tid  json.RawMessage `json:"tid"`
	Ts   json.Number     `json:"ts"`
	Dur  json.Number     `json:"dur"`
	ID   json.Number     `json:"id"`
	Bp   string          `json:"bp"`
	S    string          `json:"s"`
	Args map[string]any  `json:"args"`

	ts, dur  int64 // ns
	pid, tid int64
}

func (e *event) cat() string {
	if e.Cat == nil {
		return ""
	}
	return *e.Cat
}

func (e *event) end() int64 { return e.ts + e.dur }

func (e *event) arg(t *testing.T, key string) int64 {
	t.Helper()
	v, ok := e.Args[key]
	if !ok {
		t.Fatalf("%s %q: no arg %q in %v", e.cat(), e.Name, key, e.Args)
	}
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%s %q: arg %q = %v, not a number", e.cat(), e.Name, key, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%s %q: arg %q = %v: %v", e.cat(), e.Name, key, n, err)
	}
	return i
}

func (e *event) hasArg(key string) bool { _, ok := e.Args[key]; return ok }

type parsed struct {
	keys   []string // top-level keys, in order
	top    map[string]json.RawMessage
	events []*event
}

var usRE = regexp.MustCompile(`^[0-9]+\.[0-9]{3}$`)

// parseUS reads "123.456" (µs with exactly 3 decimals) as ns.
func parseUS(t *testing.T, n json.Number) int64 {
	t.Helper()
	s := string(n)
	if !usRE.MatchString(s) {
		t.Fatalf("time %q is not µs with 3 decimals", s)
	}
	v, err := strconv.ParseInt(strings.Replace(s, ".", "", 1), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// parse decodes a trace with encoding/json's streaming Decoder, one event
// at a time, and checks the top level is a single well-formed object.
func parse(t *testing.T, data []byte) *parsed {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := &parsed{top: map[string]json.RawMessage{}}
	expectDelim := func(want json.Delim) {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("reading %q: %v", want, err)
		}
		if d, ok := tok.(json.Delim); !ok || d != want {
			t.Fatalf("got %v, want %q", tok, want)
		}
	}
	expectDelim('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		key := tok.(string)
		p.keys = append(p.keys, key)
		if key != "traceEvents" {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatalf("top-level %q: %v", key, err)
			}
			p.top[key] = raw
			continue
		}
		expectDelim('[')
		for dec.More() {
			e := &event{}
			if err := dec.Decode(e); err != nil {
				t.Fatalf("event %d: %v", len(p.events), err)
			}
			if e.Ts != "" {
				e.ts = parseUS(t, e.Ts)
			}
			if e.Dur != "" {
				e.dur = parseUS(t, e.Dur)
			}
			if len(e.Pid) > 0 && e.Pid[0] != '"' {
				e.pid, _ = strconv.ParseInt(string(e.Pid), 10, 64)
				e.tid, _ = strconv.ParseInt(string(e.Tid), 10, 64)
			}
			p.events = append(p.events, e)
		}
		expectDelim(']')
	}
	expectDelim('}')
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("data after the top-level object: %v", err)
	}
	return p
}

func generate(t testing.TB, opt Options) ([]byte, Stats) {
	t.Helper()
	var buf bytes.Buffer
	st, err := Generate(&buf, opt)
	if err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != st.Bytes || st.CompressedBytes != st.Bytes {
		t.Fatalf("wrote %d bytes, Stats says %d / %d", buf.Len(), st.Bytes, st.CompressedBytes)
	}
	return buf.Bytes(), st
}

func TestValidTraceMatchesGroundTruth(t *testing.T) {
	for _, opt := range []Options{
		{TargetBytes: 3 << 20, Seed: 1},
		{TargetBytes: 4 << 20, Seed: 2, Devices: 2, Steps: 3},
		{Layers: 2, MicroBatches: 3, Steps: 2, Seed: 3, WorldSize: 1},
		{Layers: 4, MicroBatches: 2, Steps: 4, Seed: 4, Devices: 2, WorldSize: 8},
	} {
		t.Run(fmt.Sprintf("seed%d", opt.Seed), func(t *testing.T) {
			data, st := generate(t, opt)
			p := parse(t, data)
			checkTopLevel(t, p, st)
			checkCounts(t, p, st)
			checkLinks(t, p)
			checkNesting(t, p)
			checkGPUStreams(t, p)
			checkPython(t, p)
			checkFwdBwd(t, p)
			checkSteps(t, p, st)
			checkMemory(t, p)
			checkShapes(t, p, st)
		})
	}
}

func checkTopLevel(t *testing.T, p *parsed, st Stats) {
	if p.keys[0] != "schemaVersion" || p.keys[len(p.keys)-1] != "baseTimeNanoseconds" {
		t.Errorf("top-level keys %v: want schemaVersion first, baseTimeNanoseconds last", p.keys)
	}
	var base int64
	if err := json.Unmarshal(p.top["baseTimeNanoseconds"], &base); err != nil || base != st.BaseTimeNs {
		t.Errorf("baseTimeNanoseconds = %s, Stats %d (%v)", p.top["baseTimeNanoseconds"], st.BaseTimeNs, err)
	}
	var devs []struct {
		ID     int    `json:"id"`
		Name   string `json:"name"`
		NumSms int    `json:"numSms"`
	}
	if err := json.Unmarshal(p.top["deviceProperties"], &devs); err != nil || len(devs) != st.Devices {
		t.Errorf("deviceProperties: %d devices (want %d), %v", len(devs), st.Devices, err)
	}
	for i, d := range devs {
		if d.ID != i || d.NumSms != 132 || d.Name == "" {
			t.Errorf("deviceProperties[%d] = %+v", i, d)
		}
	}
	var di struct {
		Backend   string `json:"backend"`
		Rank      int    `json:"rank"`
		WorldSize int    `json:"world_size"`
	}
	if err := json.Unmarshal(p.top["distributedInfo"], &di); err != nil || di.WorldSize != st.WorldSize {
		t.Errorf("distributedInfo = %+v, want world_size %d (%v)", di, st.WorldSize, err)
	}
	for _, k := range []string{"record_shapes", "profile_memory", "with_stack", "displayTimeUnit", "traceName"} {
		if _, ok := p.top[k]; !ok {
			t.Errorf("no top-level %q", k)
		}
	}
}

func checkCounts(t *testing.T, p *parsed, st Stats) {
	cats, phs := map[string]int64{}, map[string]int64{}
	for _, e := range p.events {
		cats[e.cat()]++
		phs[e.Ph]++
	}
	if int64(len(p.events)) != st.Events {
		t.Errorf("%d events, Stats.Events = %d", len(p.events), st.Events)
	}
	if fmt.Sprint(cats) != fmt.Sprint(st.ByCategory) {
		t.Errorf("categories\n got  %v\n want %v", cats, st.ByCategory)
	}
	if fmt.Sprint(phs) != fmt.Sprint(st.ByPhase) {
		t.Errorf("phases\n got  %v\n want %v", phs, st.ByPhase)
	}
	named := map[string]int64{
		"kernel": st.Kernels, "gpu_memcpy": st.Memcpys, "gpu_memset": st.Memsets,
		"cuda_runtime": st.RuntimeCalls, "cpu_op": st.CPUOps, "user_annotation": st.UserAnnotations,
		"python_function": st.PythonFunctions, "cpu_instant_event": st.MemoryEvents,
		"ac2g": 2 * st.FlowPairs, "fwdbwd": 2 * st.FwdBwdPairs,
	}
	for c, n := range named {
		if cats[c] != n {
			t.Errorf("%s: %d in the file, Stats field says %d", c, cats[c], n)
		}
		if n == 0 && c != "gpu_memset" {
			t.Errorf("no %s events at all", c)
		}
	}
	var kns int64
	for _, e := range p.events {
		if e.cat() == "kernel" {
			kns += e.dur
		}
	}
	if kns != st.KernelNs {
		t.Errorf("kernel time %d ns, Stats.KernelNs %d", kns, st.KernelNs)
	}
}

func isGPU(c string) bool { return c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset" }

// checkLinks: every GPU event has exactly one runtime call with its
// correlation, launched before it starts, by the op named by its External
// id; ac2g flows pair runtime calls with GPU events.
func checkLinks(t *testing.T, p *parsed) {
	rts := map[int64]*event{}
	ops := map[int64]*event{}
	for _, e := range p.events {
		switch e.cat() {
		case "cuda_runtime":
			c := e.arg(t, "correlation")
			if rts[c] != nil {
				t.Fatalf("correlation %d on two runtime calls", c)
			}
			rts[c] = e
		case "cpu_op", "user_annotation":
			x := e.arg(t, "External id")
			if ops[x] != nil {
				t.Fatalf("External id %d on two ops", x)
			}
			ops[x] = e
		}
	}
	gpuCorr := map[int64]*event{}
	for _, e := range p.events {
		if !isGPU(e.cat()) {
			continue
		}
		c := e.arg(t, "correlation")
		rt := rts[c]
		if rt == nil {
			t.Fatalf("%s %q: correlation %d has no runtime call", e.cat(), e.Name, c)
		}
		if gpuCorr[c] != nil {
			t.Fatalf("correlation %d on two GPU events", c)
		}
		gpuCorr[c] = e
		if e.ts < rt.ts {
			t.Errorf("%q starts at %d, before its launch at %d", e.Name, e.ts, rt.ts)
		}
		if x := e.arg(t, "External id"); x != rt.arg(t, "External id") {
			t.Errorf("GPU event External id %d != runtime's %d", x, rt.arg(t, "External id"))
		}
		if e.arg(t, "device") != e.pid || e.arg(t, "stream") != e.tid {
			t.Errorf("%q: device/stream args %v disagree with pid/tid %d/%d", e.Name, e.Args, e.pid, e.tid)
		}
		if e.cat() == "kernel" {
			for _, k := range []string{"queued", "context", "registers per thread", "shared memory", "blocks per SM", "warps per SM", "grid", "block", "est. achieved occupancy %"} {
				if !e.hasArg(k) {
					t.Fatalf("kernel without %q: %v", k, e.Args)
				}
			}
		} else if e.arg(t, "bytes") <= 0 || !e.hasArg("memory bandwidth (GB/s)") {
			t.Errorf("%s without bytes/bandwidth: %v", e.Name, e.Args)
		}
	}
	for c, rt := range rts {
		x := rt.arg(t, "External id")
		if x == 0 {
			continue
		}
		op := ops[x]
		if op == nil || op.tid != rt.tid || rt.ts < op.ts || rt.end() > op.end() {
			t.Errorf("runtime call %d (%s): External id %d is not an op enclosing it on its thread", c, rt.Name, x)
		}
	}
	// ac2g: s at the runtime call, f (bp e) at the GPU event.
	starts, ends := map[int64]*event{}, map[int64]*event{}
	for _, e := range p.events {
		if e.cat() != "ac2g" {
			continue
		}
		id, _ := e.ID.Int64()
		switch e.Ph {
		case "s":
			rt := rts[id]
			if rt == nil || rt.ts != e.ts || rt.tid != e.tid || starts[id] != nil {
				t.Fatalf("ac2g s %d does not sit on its runtime call", id)
			}
			starts[id] = e
		case "f":
			ge := gpuCorr[id]
			if ge == nil || ge.ts != e.ts || ge.tid != e.tid || e.Bp != "e" || ends[id] != nil {
				t.Fatalf("ac2g f %d does not sit on its GPU event", id)
			}
			ends[id] = e
		default:
			t.Fatalf("ac2g with ph %q", e.Ph)
		}
	}
	if len(starts) != len(gpuCorr) || len(ends) != len(gpuCorr) {
		t.Errorf("%d ac2g starts, %d ends, %d GPU events", len(starts), len(ends), len(gpuCorr))
	}
}

// checkNesting: on each CPU thread, complete events (ops, annotations,
// Python frames, runtime calls) nest strictly, and all lie in the Trace span.
func checkNesting(t *testing.T, p *parsed) {
	var span *event
	byThread := map[int64][]*event{}
	for _, e := range p.events {
		switch e.cat() {
		case "Trace":
			span = e
		case "cpu_op", "user_annotation", "python_function", "cuda_runtime":
			byThread[e.tid] = append(byThread[e.tid], e)
		}
	}
	if span == nil {
		t.Fatal("no Trace span")
	}
	for _, e := range p.events {
		if e.ts != 0 && (e.ts < span.ts || e.end() > span.end()) && e.Ph != "M" && e.Name != "Record Window End" {
			t.Errorf("%s %q [%d,%d] outside the Trace span [%d,%d]", e.cat(), e.Name, e.ts, e.end(), span.ts, span.end())
			break
		}
	}
	if len(byThread) != 2 {
		t.Errorf("CPU events on %d threads, want 2 (main + autograd)", len(byThread))
	}
	for tid, evs := range byThread {
		sort.SliceStable(evs, func(i, j int) bool {
			if evs[i].ts != evs[j].ts {
				return evs[i].ts < evs[j].ts
			}
			return evs[i].dur > evs[j].dur
		})
		var stack []*event
		depth := 0
		for _, e := range evs {
			for len(stack) > 0 && stack[len(stack)-1].end() <= e.ts {
				stack = stack[:len(stack)-1]
			}
			if n := len(stack); n > 0 && e.end() > stack[n-1].end() {
				t.Fatalf("thread %d: %s %q [%d,%d] overlaps %q [%d,%d] without nesting",
					tid, e.cat(), e.Name, e.ts, e.end(), stack[n-1].Name, stack[n-1].ts, stack[n-1].end())
			}
			if e.dur <= 0 {
				t.Fatalf("%q has duration %d", e.Name, e.dur)
			}
			stack = append(stack, e)
			depth = max(depth, len(stack))
		}
		if depth < 5 {
			t.Errorf("thread %d: nesting only %d deep", tid, depth)
		}
	}
}

// checkGPUStreams: work on one stream never overlaps.
func checkGPUStreams(t *testing.T, p *parsed) {
	streams := map[[2]int64][]*event{}
	for _, e := range p.events {
		if isGPU(e.cat()) {
			k := [2]int64{e.pid, e.tid}
			streams[k] = append(streams[k], e)
		}
	}
	for k, evs := range streams {
		sort.Slice(evs, func(i, j int) bool { return evs[i].ts < evs[j].ts })
		for i := 1; i < len(evs); i++ {
			if evs[i].ts < evs[i-1].end() {
				t.Fatalf("stream %v: %q starts before %q ends", k, evs[i].Name, evs[i-1].Name)
			}
		}
	}
}

func checkPython(t *testing.T, p *parsed) {
	byID := map[int64]*event{}
	roots := 0
	for _, e := range p.events {
		if e.cat() != "python_function" {
			continue
		}
		id := e.arg(t, "Python id")
		if byID[id] != nil {
			t.Fatalf("Python id %d twice", id)
		}
		byID[id] = e
	}
	for id, e := range byID {
		if e.Args["Python parent id"] == nil {
			roots++
			continue
		}
		par := byID[e.arg(t, "Python parent id")]
		if par == nil {
			t.Fatalf("Python id %d: parent missing", id)
		}
		if e.ts < par.ts || e.end() > par.end() || e.tid != par.tid {
			t.Fatalf("Python frame %q not inside its parent %q", e.Name, par.Name)
		}
	}
	if roots != 1 {
		t.Errorf("%d root Python frames, want 1", roots)
	}
}

// checkFwdBwd: each fwdbwd flow starts on a forward op and ends on the
// backward node with the same sequence number, later, on the autograd thread.
func checkFwdBwd(t *testing.T, p *parsed) {
	type key struct{ tid, ts int64 }
	seqAt := map[key][]int64{}
	for _, e := range p.events {
		if e.cat() == "cpu_op" && e.hasArg("Sequence number") {
			k := key{e.tid, e.ts}
			seqAt[k] = append(seqAt[k], e.arg(t, "Sequence number"))
		}
	}
	s, f := map[int64]*event{}, map[int64]*event{}
	for _, e := range p.events {
		if e.cat() != "fwdbwd" {
			continue
		}
		id, _ := e.ID.Int64()
		found := false
		for _, q := range seqAt[key{e.tid, e.ts}] {
			found = found || q == id
		}
		if !found {
			t.Fatalf("fwdbwd %s %d not on an op with that Sequence number", e.Ph, id)
		}
		if e.Ph == "s" {
			s[id] = e
		} else {
			f[id] = e
		}
	}
	if len(s) == 0 || len(s) != len(f) {
		t.Fatalf("%d fwdbwd starts, %d ends", len(s), len(f))
	}
	for id, a := range s {
		b := f[id]
		if b == nil || b.ts <= a.ts || b.tid == a.tid || b.Bp != "e" {
			t.Fatalf("fwdbwd %d: bad end %+v for start %+v", id, b, a)
		}
	}
}

func checkSteps(t *testing.T, p *parsed, st Stats) {
	var steps []*event
	gpuSteps := map[string][]*event{}
	var gpu []*event
	for _, e := range p.events {
		switch {
		case e.cat() == "user_annotation" && strings.HasPrefix(e.Name, "ProfilerStep#"):
			steps = append(steps, e)
		case e.cat() == "gpu_user_annotation" && strings.HasPrefix(e.Name, "ProfilerStep#"):
			gpuSteps[e.Name] = append(gpuSteps[e.Name], e)
		case isGPU(e.cat()):
			gpu = append(gpu, e)
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].ts < steps[j].ts })
	if len(steps) != len(st.Steps) || len(steps) < 2 {
		t.Fatalf("%d ProfilerSteps, Stats has %d", len(steps), len(st.Steps))
	}
	rts := map[int64]*event{}
	for _, e := range p.events {
		if e.cat() == "cuda_runtime" {
			rts[e.arg(t, "correlation")] = e
		}
	}
	for i, e := range steps {
		want := st.Steps[i]
		if e.Name != want.Name() || e.ts != want.StartNs || e.end() != want.EndNs {
			t.Errorf("step %d: %q [%d,%d], Stats %q [%d,%d]", i, e.Name, e.ts, e.end(), want.Name(), want.StartNs, want.EndNs)
		}
		if i > 0 && (want.Num != st.Steps[i-1].Num+1 || e.ts < steps[i-1].end()) {
			t.Errorf("step %d not after step %d", want.Num, st.Steps[i-1].Num)
		}
		// GPU work launched in the step, and the GPU-side annotation covers it.
		var k, n int64
		for _, g := range gpu {
			rt := rts[g.arg(t, "correlation")]
			if rt.ts < e.ts || rt.ts >= e.end() {
				continue
			}
			n++
			if g.cat() == "kernel" {
				k++
			}
			inside := false
			for _, a := range gpuSteps[e.Name] {
				inside = inside || (a.pid == g.pid && g.ts >= a.ts && g.end() <= a.end())
			}
			if !inside {
				t.Fatalf("%q of %s not inside its gpu_user_annotation", g.Name, e.Name)
			}
		}
		if k != want.Kernels || n != want.GPUEvents {
			t.Errorf("%s: %d kernels / %d GPU events launched, Stats %d / %d", e.Name, k, n, want.Kernels, want.GPUEvents)
		}
	}
}

// checkMemory replays the [memory] events: every free matches a live
// allocation, totals are running sums, reserved covers allocated.
func checkMemory(t *testing.T, p *parsed) {
	type dev struct {
		live  map[int64]int64
		total int64
		init  bool
	}
	devs := map[[2]int64]*dev{}
	n := 0
	for _, e := range p.events {
		if e.Name != "[memory]" {
			continue
		}
		n++
		if e.cat() != "cpu_instant_event" || e.Ph != "i" || e.S != "t" {
			t.Fatalf("[memory] event %+v", e)
		}
		k := [2]int64{e.arg(t, "Device Type"), e.arg(t, "Device Id")}
		d := devs[k]
		if d == nil {
			d = &dev{live: map[int64]int64{}}
			devs[k] = d
		}
		addr, b := e.arg(t, "Addr"), e.arg(t, "Bytes")
		tot, res := e.arg(t, "Total Allocated"), e.arg(t, "Total Reserved")
		if !d.init {
			d.total, d.init = tot-b, true
		}
		d.total += b
		if tot != d.total {
			t.Fatalf("device %v: Total Allocated %d, running sum %d", k, tot, d.total)
		}
		if k[0] == 1 && res < tot {
			t.Fatalf("device %v: reserved %d < allocated %d", k, res, tot)
		}
		if b > 0 {
			if _, ok := d.live[addr]; ok {
				t.Fatalf("device %v: %#x allocated twice", k, addr)
			}
			d.live[addr] = b
		} else {
			if d.live[addr] != -b {
				t.Fatalf("device %v: free of %d at %#x, live %d", k, -b, addr, d.live[addr])
			}
			delete(d.live, addr)
		}
	}
	if n == 0 {
		t.Fatal("no [memory] events")
	}
	for k, d := range devs {
		if len(d.live) != 0 {
			t.Errorf("device %v: %d allocations never freed", k, len(d.live))
		}
	}
}

func checkShapes(t *testing.T, p *parsed, st Stats) {
	long, nccl, p2p := 0, 0, 0
	withDims := 0
	for _, e := range p.events {
		if e.cat() == "kernel" && len(e.Name) >= 300 {
			long++
		}
		if strings.HasPrefix(e.Name, "ncclDevKernel") {
			nccl++
			if e.tid == 7 || !e.hasArg("Collective name") {
				t.Errorf("NCCL kernel on the compute stream or without collective args")
			}
		}
		if e.Name == "Memcpy PtoP (Device -> Device)" {
			p2p++
		}
		if e.cat() == "cpu_op" && e.hasArg("Input Dims") {
			withDims++
			for _, k := range []string{"Input type", "Concrete Inputs", "Record function id"} {
				if !e.hasArg(k) {
					t.Fatalf("%q has Input Dims but no %q", e.Name, k)
				}
			}
		}
	}
	if long == 0 {
		t.Error("no kernel name of 300+ characters")
	}
	if (nccl > 0) != (st.WorldSize > 1) {
		t.Errorf("%d NCCL kernels with world size %d", nccl, st.WorldSize)
	}
	if (p2p > 0) != (st.Devices > 1) {
		t.Errorf("%d peer copies with %d devices", p2p, st.Devices)
	}
	if withDims < len(p.events)/20 {
		t.Errorf("only %d ops with Input Dims", withDims)
	}
}

func TestDeterministic(t *testing.T) {
	opt := Options{TargetBytes: 1 << 20, Seed: 42}
	a, sa := generate(t, opt)
	b, sb := generate(t, opt)
	if !bytes.Equal(a, b) || fmt.Sprint(sa) != fmt.Sprint(sb) {
		t.Fatal("same options, different output")
	}
	opt.Seed = 43
	c, _ := generate(t, opt)
	if bytes.Equal(a, c) {
		t.Fatal("different seeds, same output")
	}
}

func TestSizeNearTarget(t *testing.T) {
	for _, tc := range []struct {
		opt Options
		tol float64
	}{
		{Options{TargetBytes: 12 << 20, Seed: 5}, 0.04},
		{Options{TargetBytes: 40 << 20, Seed: 6, Steps: 3}, 0.04},
		{Options{TargetBytes: 30 << 20, Seed: 7, Devices: 2}, 0.04},
	} {
		st, err := Generate(io.Discard, tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		ratio := float64(st.Bytes) / float64(tc.opt.TargetBytes)
		if ratio < 1-tc.tol || ratio > 1+tc.tol {
			t.Errorf("target %d: wrote %d (%.3f)", tc.opt.TargetBytes, st.Bytes, ratio)
		}
		if tc.opt.Steps > 0 && len(st.Steps) != tc.opt.Steps {
			t.Errorf("%d steps, asked %d", len(st.Steps), tc.opt.Steps)
		}
	}
}

func TestGzip(t *testing.T) {
	opt := Options{TargetBytes: 2 << 20, Seed: 9}
	plain, _ := generate(t, opt)
	opt.Gzip = true
	var buf bytes.Buffer
	st, err := Generate(&buf, opt)
	if err != nil {
		t.Fatal(err)
	}
	if st.CompressedBytes != int64(buf.Len()) || st.Bytes != int64(len(plain)) || st.CompressedBytes >= st.Bytes/4 {
		t.Fatalf("gzip stats: %d compressed (buffer %d), %d plain (want %d)", st.CompressedBytes, buf.Len(), st.Bytes, len(plain))
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(got) != sha256.Sum256(plain) {
		t.Fatal("gunzipped output differs from the plain output")
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n -= len(p); f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriteErrorStopsGeneration(t *testing.T) {
	st, err := Generate(&failWriter{n: 3 << 20}, Options{TargetBytes: 200 << 20, Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
	if st.Bytes > 50<<20 {
		t.Errorf("kept generating after the writer failed: %d bytes", st.Bytes)
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{{Devices: 3}, {TargetBytes: -1}, {WorldSize: -2}} {
		if _, err := Generate(io.Discard, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	opt := Options{TargetBytes: 64 << 20, Seed: 1}
	st, err := Generate(io.Discard, opt)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Bytes)
	for b.Loop() {
		if _, err := Generate(io.Discard, opt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGenerateGzip(b *testing.B) {
	opt := Options{TargetBytes: 32 << 20, Seed: 1, Gzip: true, GzipLevel: 1}
	st, err := Generate(io.Discard, opt)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Bytes)
	for b.Loop() {
		if _, err := Generate(io.Discard, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// PerLaunchArgs varies kernels' launch geometry per launch and changes
// nothing else: the same events, names and times.
func TestPerLaunchArgs(t *testing.T) {
	kernels := func(perLaunch bool) (grids map[string]bool, names []string) {
		var b bytes.Buffer
		if _, err := Generate(&b, Options{TargetBytes: 2 << 20, Seed: 3, PerLaunchArgs: perLaunch}); err != nil {
			t.Fatal(err)
		}
		var tr struct {
			TraceEvents []struct {
				Cat, Name string
				Ts        json.Number
				Args      map[string]any
			}
		}
		if err := json.Unmarshal(b.Bytes(), &tr); err != nil {
			t.Fatal(err)
		}
		grids = map[string]bool{}
		for _, e := range tr.TraceEvents {
			names = append(names, e.Name+"@"+e.Ts.String())
			if e.Cat == "kernel" {
				grids[fmt.Sprint(e.Args["grid"], e.Args["warps per SM"])] = true
			}
		}
		return grids, names
	}
	fixed, namesFixed := kernels(false)
	varied, namesVaried := kernels(true)
	if len(varied) < 10*len(fixed) {
		t.Errorf("%d distinct launch geometries with PerLaunchArgs, %d without: want many more", len(varied), len(fixed))
	}
	if fmt.Sprint(namesFixed) != fmt.Sprint(namesVaried) {
		t.Error("PerLaunchArgs changed the events, not only their args")
	}
}

// DistinctNames gives CPU ops names of their own.
func TestDistinctNames(t *testing.T) {
	names := func(distinct bool) int {
		var b bytes.Buffer
		if _, err := Generate(&b, Options{TargetBytes: 2 << 20, Seed: 3, DistinctNames: distinct}); err != nil {
			t.Fatal(err)
		}
		var tr struct{ TraceEvents []struct{ Cat, Name string } }
		if err := json.Unmarshal(b.Bytes(), &tr); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, e := range tr.TraceEvents {
			if e.Cat == "cpu_op" {
				seen[e.Name] = true
			}
		}
		return len(seen)
	}
	if plain, distinct := names(false), names(true); distinct < 20*plain {
		t.Errorf("%d distinct cpu_op names with DistinctNames, %d without", distinct, plain)
	}
}

// OpsPerStep makes thousands of steps fit a small trace: each step a few
// KB, with OpsPerStep kernels, still a valid trace.
func TestShortSteps(t *testing.T) {
	opt := Options{Steps: 300, OpsPerStep: 3, Seed: 5, WorldSize: 1}
	data, st := generate(t, opt)
	p := parse(t, data)
	checkTopLevel(t, p, st)
	checkLinks(t, p)
	checkGPUStreams(t, p)
	checkPython(t, p)
	checkSteps(t, p, st)
	if len(st.Steps) != opt.Steps {
		t.Fatalf("%d steps, asked %d", len(st.Steps), opt.Steps)
	}
	for _, s := range st.Steps {
		if s.Kernels != int64(opt.OpsPerStep) {
			t.Fatalf("step %d: %d kernels, want %d", s.Num, s.Kernels, opt.OpsPerStep)
		}
	}
	if per := st.Bytes / int64(opt.Steps); per > 12<<10 {
		t.Errorf("%d bytes a step, want a few KB", per)
	}
}
