package tracegen

import (
	"io"
	"strconv"
)

// Record kinds.
const (
	kOp      uint8 = iota // cpu_op
	kAnn                  // user_annotation
	kPy                   // python_function
	kRuntime              // cuda_runtime
	kKernel               // kernel
	kMemcpy               // gpu_memcpy
	kMemset               // gpu_memset
	kMem                  // [memory] instant
	kGPUAnn               // gpu_user_annotation
)

// Categories as counted in Stats.
const (
	cNone = iota
	cCPUOp
	cUserAnn
	cPython
	cRuntime
	cKernel
	cMemcpy
	cMemset
	cGPUAnn
	cAC2G
	cFwdBwd
	cInstant
	cTrace
	numCats
)

var catNames = [numCats]string{
	"", "cpu_op", "user_annotation", "python_function", "cuda_runtime", "kernel",
	"gpu_memcpy", "gpu_memset", "gpu_user_annotation", "ac2g", "fwdbwd",
	"cpu_instant_event", "Trace",
}

// Phases as counted in Stats.
const (
	phX = iota
	phI
	phS
	phF
	phM
	numPh
)

var phNames = [numPh]string{"X", "i", "s", "f", "M"}

// rec flags.
const (
	fOpen     uint8 = 1 << iota
	fFlowS          // forward op: starts a fwdbwd flow (id = seq)
	fFlowF          // backward node: ends a fwdbwd flow (id = seq)
	fHasGPU         // runtime call with a GPU event (ac2g flow)
	fNoParent       // python frame whose parent is null
	fTiny           // python frame written in its shortest form (TinyEvents)
)

// rec is one event waiting to be written. Times are ns relative to
// baseTimeNanoseconds.
type rec struct {
	ts, dur int64
	ext     int64 // External id (own for ops; the launching op's for runtime/GPU)
	corr    int64 // correlation (runtime, GPU events)
	seq     int64 // Sequence number, -1 if none
	a, b    int64 // python: id, parent id; memory: Addr, Bytes; memcpy/memset: bytes
	c, d    int64 // memory: Total Allocated, Total Reserved
	num     int32 // numeric suffix of the name, -1 if none
	h       int32 // handle of an open op/annotation/python frame
	name    uint16
	args    uint16 // index into gen.frags (0: none)
	kind    uint8
	th      uint8 // CPU thread (thMain, thBwd) or GPU device; memory: device+1 (0 = CPU)
	stream  uint8 // GPU stream slot
	flags   uint8
	kern    kernID
}

const (
	thMain = 0
	thBwd  = 1
)

const recFlushAt = 4096

type gen struct {
	opt  Options
	m    model
	rng  uint64
	buf  []byte
	aw   *asyncWriter
	lay  *relayout // nil for the default layout
	out  []byte    // the relaid buffer
	stop bool      // the writer failed: stop generating

	bytes   int64 // uncompressed bytes flushed so far
	nEv     int64
	cats    [numCats]int64
	phases  [numPh]int64
	kernNs  int64
	steps   []Step
	evIdx   int64
	extID   int64
	corrID  int64
	seqNum  int64
	pyID    int64
	t0, t1  int64 // Trace span
	baseNs  int64
	pid     int64
	tids    [2]int64
	cur     [2]int64 // time cursor per CPU thread
	busy    [2][2]int64
	streams [2][2]int64
	recs    []rec
	loc     []int32 // handle -> index in recs
	freeH   []int32
	opStk   [2][]int32
	pyStk   []int32

	// per-step GPU accounting
	stepKern, stepGPU int64
	gpuLo, gpuHi      [2]int64
	optLo, optHi      [2]int64
	inOpt             bool

	// memory
	live     [3][]alloc // per device, [Devices] = CPU
	next     [3]int64
	total    [3]int64
	reserved [3]int64
}

type alloc struct{ addr, bytes int64 }

func newGen(opt Options, w io.Writer) *gen {
	g := &gen{opt: opt}
	g.rng = uint64(opt.Seed)*0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D
	for range 4 {
		g.rand()
	}
	if w != nil {
		g.aw = newAsyncWriter(w)
		g.buf = make([]byte, 0, bufCap)
	} else {
		g.buf = make([]byte, 0, bufCap)
	}
	if g.lay = newRelayout(opt.Layout); g.lay != nil {
		g.out = make([]byte, 0, bufCap)
	}
	g.recs = make([]rec, 0, recFlushAt+256)
	g.m = newModel(g)
	g.pid = 1000 + int64(g.rand()%60000)
	g.tids = [2]int64{g.pid, g.pid + 97 + int64(g.rand()%200)}
	g.baseNs = 1751410836000000000 + int64(g.rand()%100000)*1000000000
	g.t0 = 1428625731000000 + int64(g.rand()%1000000000)
	g.cur = [2]int64{g.t0, g.t0}
	g.streams = [2][2]int64{{7, 20}, {23, 36}}
	g.extID = int64(g.rand() % 1000)
	g.corrID = 100000 + int64(g.rand()%500000)
	g.seqNum = 100 + int64(g.rand()%10000)
	for d := range 2 {
		g.next[d] = 0x7f2a00000000 + int64(d)<<36
		g.total[d] = g.m.baseline
		g.reserved[d] = roundUp(g.m.baseline, 20<<20)
	}
	g.next[2] = 0x5581a0000000
	return g
}

// rand is xorshift64*.
func (g *gen) rand() uint64 {
	g.rng ^= g.rng >> 12
	g.rng ^= g.rng << 25
	g.rng ^= g.rng >> 27
	return g.rng * 2685821657736338717
}

// jit returns base scaled by a uniform factor in [0.85, 1.35).
func (g *gen) jit(base int64) int64 {
	if base <= 1 {
		return base
	}
	return base*85/100 + int64((g.rand()>>20)%uint64(base/2+1))
}

// chance reports true with probability 1/n.
func (g *gen) chance(n uint64) bool { return (g.rand()>>17)%n == 0 }

func roundUp(x, to int64) int64 { return (x + to - 1) / to * to }

// ---- recording ----------------------------------------------------------

func (g *gen) push(r rec) int {
	g.recs = append(g.recs, r)
	return len(g.recs) - 1
}

// hnd is a stable reference to an open record: records move when closed
// ones are flushed, handles do not.
type hnd int32

func (g *gen) handle(i int) hnd {
	var h int32
	if n := len(g.freeH); n > 0 {
		h = g.freeH[n-1]
		g.freeH = g.freeH[:n-1]
	} else {
		h = int32(len(g.loc))
		g.loc = append(g.loc, 0)
	}
	g.loc[h] = int32(i)
	g.recs[i].h = h
	return hnd(h)
}

func (g *gen) at(h hnd) *rec { return &g.recs[g.loc[h]] }

// op opens a cpu_op on thread th.
func (g *gen) op(th int, name, args uint16) hnd {
	return g.openOp(th, kOp, name, args, -1)
}

// ann opens a user_annotation on thread th.
func (g *gen) ann(th int, name uint16, num int32) hnd {
	return g.openOp(th, kAnn, name, 0, num)
}

func (g *gen) openOp(th int, kind uint8, name, args uint16, num int32) hnd {
	g.cur[th] += g.jit(350)
	g.extID++
	i := g.push(rec{ts: g.cur[th], ext: g.extID, seq: -1, num: num, name: name, args: args, kind: kind, th: uint8(th), flags: fOpen})
	g.opStk[th] = append(g.opStk[th], int32(i))
	return g.handle(i)
}

// fwd opens a forward op that creates autograd node seq (fwdbwd flow start).
func (g *gen) fwd(name, args uint16, seq int64) hnd {
	h := g.op(thMain, name, args)
	r := g.at(h)
	r.seq = seq
	r.flags |= fFlowS
	return h
}

// py opens a python_function frame on the main thread.
func (g *gen) py(name uint16, num int32) hnd {
	g.cur[thMain] += g.jit(250)
	g.pyID++
	r := rec{ts: g.cur[thMain], seq: -1, num: num, name: name, kind: kPy, flags: fOpen, a: g.pyID}
	if n := len(g.pyStk); n > 0 {
		r.b = g.recs[g.pyStk[n-1]].a
	} else {
		r.flags |= fNoParent
	}
	i := g.push(r)
	g.pyStk = append(g.pyStk, int32(i))
	return g.handle(i)
}

// end closes record i (an op, annotation or python frame), which must be
// the innermost open one of its kind on its thread.
func (g *gen) end(h hnd) {
	i := g.loc[h]
	g.freeH = append(g.freeH, int32(h))
	r := &g.recs[i]
	th := int(r.th)
	stk := &g.opStk[th]
	if r.kind == kPy {
		th = thMain
		stk = &g.pyStk
	}
	if n := len(*stk); n == 0 || (*stk)[n-1] != i {
		panic("tracegen: records closed out of order")
	}
	*stk = (*stk)[:len(*stk)-1]
	g.cur[th] += g.jit(450)
	r.dur = g.cur[th] - r.ts
	r.flags &^= fOpen
	if len(g.recs) >= recFlushAt {
		g.flushRecs()
	}
}

// leaf is an op with no children that takes about self ns. With
// TinyEvents the Python frames of the main thread's leaves come first.
func (g *gen) leaf(th int, name, args uint16, self int64) {
	if g.opt.TinyEvents && th == thMain {
		for range tinyFrames {
			i := g.py(pyLen, -1)
			g.at(i).flags |= fTiny
			g.cur[thMain] += g.jit(200)
			g.end(i)
		}
	}
	i := g.op(th, name, args)
	g.cur[th] += g.jit(self)
	g.end(i)
}

// pyLeaf is a python frame with no children.
func (g *gen) pyLeaf(name uint16) {
	i := g.py(name, -1)
	g.cur[thMain] += g.jit(600)
	g.end(i)
}

func (g *gen) curExt(th int) int64 {
	if s := g.opStk[th]; len(s) > 0 {
		return g.recs[s[len(s)-1]].ext
	}
	return 0
}

// rt opens a runtime call; close it with endRT.
func (g *gen) rt(th int, name uint16) int {
	g.cur[th] += g.jit(400)
	g.corrID++
	return g.push(rec{ts: g.cur[th], ext: g.curExt(th), corr: g.corrID, seq: -1, num: -1, name: name, kind: kRuntime, th: uint8(th)})
}

func (g *gen) endRT(i int) {
	r := &g.recs[i]
	r.dur = g.cur[r.th] - r.ts
}

// gpu records a GPU event for runtime call rt, queued on (dev, slot), that
// runs for dur. It starts after the call began and after the stream's
// previous work; if after is > 0 it also waits for it (cross-stream event).
func (g *gen) gpu(rt int, kind uint8, name uint16, k kernID, dev, slot int, dur, after int64) int {
	r := &g.recs[rt]
	r.flags |= fHasGPU
	start := max(g.busy[dev][slot]+g.jit(1100), r.ts+g.jit(2600), after)
	g.busy[dev][slot] = start + dur
	g.stepGPU++
	if kind == kKernel {
		g.stepKern++
		g.kernNs += dur
	}
	if g.gpuLo[dev] == 0 || start < g.gpuLo[dev] {
		g.gpuLo[dev] = start
	}
	g.gpuHi[dev] = max(g.gpuHi[dev], start+dur)
	if g.inOpt {
		if g.optLo[dev] == 0 || start < g.optLo[dev] {
			g.optLo[dev] = start
		}
		g.optHi[dev] = max(g.optHi[dev], start+dur)
	}
	return g.push(rec{ts: start, dur: dur, ext: r.ext, corr: r.corr, seq: -1, num: -1, name: name, kind: kind, th: uint8(dev), stream: uint8(slot), kern: k})
}

// launch records cudaLaunchKernel + its kernel, of the kernel's usual
// duration.
func (g *gen) launch(th int, k kernID, dev, slot int) {
	g.launchNs(th, k, dev, slot, g.m.kdur[k])
}

// launchNs is launch with a kernel of about ns.
func (g *gen) launchNs(th int, k kernID, dev, slot int, ns int64) {
	i := g.rt(th, nLaunchKernel)
	cost := int64(3800)
	if g.chance(150) {
		cost = 45000 // an occasional slow launch
	}
	g.cur[th] += g.jit(cost)
	g.gpu(i, kKernel, kernNames[k], k, dev, slot, g.jit(ns), 0)
	g.endRT(i)
}

// launchAfter is launch with the kernel waiting for another stream (NCCL
// after compute).
func (g *gen) launchAfter(th int, k kernID, dev, slot int, after int64) {
	i := g.rt(th, nLaunchKernel)
	g.cur[th] += g.jit(5200)
	g.gpu(i, kKernel, kernNames[k], k, dev, slot, g.jit(g.m.kdur[k]), after)
	g.endRT(i)
}

// memcpy records cudaMemcpyAsync + its copy. A copy to pageable host
// memory blocks the calling thread until it is done.
func (g *gen) memcpy(th int, name uint16, dev, slot int, bytes int64, gbps int64, after int64) {
	i := g.rt(th, nMemcpyAsync)
	g.cur[th] += g.jit(6500)
	dur := bytes/gbps + g.jit(1400)
	j := g.gpu(i, kMemcpy, name, 0, dev, slot, dur, after)
	g.recs[j].a = bytes
	if name == nMemcpyDtoH {
		g.cur[th] = max(g.cur[th], g.recs[j].ts+dur+g.jit(2500))
	}
	g.endRT(i)
}

// memset records cudaMemsetAsync + its fill.
func (g *gen) memset(th int, dev int, bytes int64) {
	i := g.rt(th, nMemsetAsync)
	g.cur[th] += g.jit(4200)
	j := g.gpu(i, kMemset, nMemset, 0, dev, 0, bytes/1800+g.jit(1000), 0)
	g.recs[j].a = bytes
	g.endRT(i)
}

// plainRT records a runtime call with no GPU event.
func (g *gen) plainRT(th int, name uint16, cost int64) {
	i := g.rt(th, name)
	g.cur[th] += g.jit(cost)
	g.endRT(i)
}

// streamSync blocks thread th until (dev, slot) drains.
func (g *gen) streamSync(th, dev, slot int) {
	i := g.rt(th, nStreamSync)
	g.cur[th] = max(g.cur[th]+g.jit(1800), g.busy[dev][slot]+g.jit(2200))
	g.endRT(i)
}

// malloc records a caching-allocator allocation on dev (-1: CPU) at the
// current time of thread th. Allocations are freed in LIFO order.
func (g *gen) malloc(th, dev int, bytes int64) {
	s := dev
	if dev < 0 {
		s = 2
	}
	bytes = roundUp(bytes, 512)
	addr := g.next[s]
	g.next[s] += bytes
	g.live[s] = append(g.live[s], alloc{addr, bytes})
	g.memEvent(th, dev, addr, bytes)
}

// free releases the newest n allocations of dev.
func (g *gen) free(th, dev, n int) {
	s := dev
	if dev < 0 {
		s = 2
	}
	for range n {
		l := len(g.live[s]) - 1
		a := g.live[s][l]
		g.live[s] = g.live[s][:l]
		g.next[s] -= a.bytes
		g.memEvent(th, dev, a.addr, -a.bytes)
	}
}

// freeTo releases allocations of dev until mark remain.
func (g *gen) freeTo(th, dev, mark int) {
	s := dev
	if dev < 0 {
		s = 2
	}
	g.free(th, dev, len(g.live[s])-mark)
}

func (g *gen) liveCount(dev int) int {
	if dev < 0 {
		return len(g.live[2])
	}
	return len(g.live[dev])
}

func (g *gen) memEvent(th, dev int, addr, bytes int64) {
	s := dev
	if dev < 0 {
		s = 2
	}
	g.total[s] += bytes
	if dev >= 0 && g.total[s] > g.reserved[s] {
		g.reserved[s] = roundUp(g.total[s], 20<<20)
	}
	g.cur[th] += g.jit(120)
	g.push(rec{ts: g.cur[th], seq: -1, num: -1, kind: kMem, th: uint8(s), a: addr, b: bytes, c: g.total[s], d: g.reserved[s], stream: uint8(th)})
}

// ---- writing ------------------------------------------------------------

// flushRecs writes every closed record, grouped the way Kineto groups them
// (CPU ops, then runtime calls with their GPU events, then memory, then
// Python frames, then GPU annotations), and keeps the open ones.
func (g *gen) flushRecs() {
	rs := g.recs
	for i := range rs {
		r := &rs[i]
		if r.flags&fOpen == 0 && (r.kind == kOp || r.kind == kAnn) {
			g.writeOp(r)
		}
	}
	for i := range rs {
		r := &rs[i]
		switch r.kind {
		case kRuntime:
			g.writeRuntime(r)
		case kKernel, kMemcpy, kMemset:
			g.writeGPU(r)
		}
	}
	for i := range rs {
		if rs[i].kind == kMem {
			g.writeMem(&rs[i])
		}
	}
	for i := range rs {
		if r := &rs[i]; r.kind == kPy && r.flags&fOpen == 0 {
			g.writePy(r)
		}
	}
	for i := range rs {
		if rs[i].kind == kGPUAnn {
			g.writeGPUAnn(&rs[i])
		}
	}
	// Keep the open records, in order, and re-point the stacks at them.
	n := 0
	for i := range rs {
		if rs[i].flags&fOpen != 0 {
			rs[n] = rs[i]
			n++
		}
	}
	g.recs = rs[:n]
	g.opStk[0], g.opStk[1], g.pyStk = g.opStk[0][:0], g.opStk[1][:0], g.pyStk[:0]
	for i := range n {
		r := &g.recs[i]
		g.loc[r.h] = int32(i)
		if r.kind == kPy {
			g.pyStk = append(g.pyStk, int32(i))
		} else {
			g.opStk[r.th] = append(g.opStk[r.th], int32(i))
		}
	}
}

// sep starts a new traceEvents entry.
func (g *gen) sep(cat, ph int) []byte {
	g.cats[cat]++
	g.phases[ph]++
	if g.nEv == 0 {
		g.nEv++
		return g.buf
	}
	g.nEv++
	return append(g.buf, ",\n"...)
}

func (g *gen) done(b []byte) {
	g.buf = b
	if len(b) >= bufFlush {
		g.flushBuf()
	}
}

func (g *gen) flushBuf() {
	out := &g.buf
	if g.lay != nil {
		g.out = g.lay.append(g.out[:0], g.buf)
		g.buf, out = g.buf[:0], &g.out
	}
	g.bytes += int64(len(*out))
	if g.aw == nil {
		*out = (*out)[:0]
		return
	}
	if g.aw.failed() != nil {
		g.stop = true
		*out = (*out)[:0]
		return
	}
	g.aw.ch <- *out
	*out = <-g.aw.free
}

// appendUS writes ns as µs with exactly three decimals.
func appendUS(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	r := ns % 1000
	return append(b, '.', byte('0'+r/100), byte('0'+r/10%10), byte('0'+r%10))
}

func appendName(b []byte, name uint16, num int32) []byte {
	b = append(b, names[name]...)
	if num >= 0 {
		b = strconv.AppendInt(b, int64(num), 10)
	}
	return b
}

// xHead writes the common head of a complete ("X") event up to the
// opening of args.
func xHead(b []byte, cat int, name uint16, num int32, pid, tid, ts, dur int64) []byte {
	b = append(b, "  {\n    \"ph\": \"X\", \"cat\": \""...)
	b = append(b, catNames[cat]...)
	b = append(b, "\", \"name\": \""...)
	b = appendName(b, name, num)
	b = append(b, "\", \"pid\": "...)
	b = strconv.AppendInt(b, pid, 10)
	b = append(b, ", \"tid\": "...)
	b = strconv.AppendInt(b, tid, 10)
	b = append(b, ",\n    \"ts\": "...)
	b = appendUS(b, ts)
	b = append(b, ", \"dur\": "...)
	b = appendUS(b, dur)
	return append(b, ",\n    \"args\": {\n      "...)
}

const argsTail = "\n    }\n  }"

func (g *gen) writeOp(r *rec) {
	cat := cCPUOp
	if r.kind == kAnn {
		cat = cUserAnn
	}
	b := g.sep(cat, phX)
	tid := g.tids[r.th]
	num := r.num
	if g.opt.DistinctNames && cat == cCPUOp && num < 0 {
		num = int32(r.ext % (1 << 31)) // External ids are unique per op
	}
	b = xHead(b, cat, r.name, num, g.pid, tid, r.ts, r.dur)
	b = append(b, "\"External id\": "...)
	b = strconv.AppendInt(b, r.ext, 10)
	b = append(b, ",\"Record function id\": 0"...)
	if r.seq >= 0 {
		b = append(b, ", \"Sequence number\": "...)
		b = strconv.AppendInt(b, r.seq, 10)
		b = append(b, ", \"Fwd thread id\": "...)
		if r.th == thBwd {
			b = append(b, '1')
		} else {
			b = append(b, '0')
		}
	}
	if r.args != 0 {
		b = append(b, ", "...)
		b = append(b, g.m.frags[r.args]...)
	}
	b = append(b, ", \"Ev Idx\": "...)
	b = strconv.AppendInt(b, g.evIdx, 10)
	g.evIdx++
	b = append(b, argsTail...)
	if r.flags&(fFlowS|fFlowF) != 0 {
		if r.flags&fFlowS != 0 {
			b = g.flowHead(b, cFwdBwd, phS, r.seq, g.pid, tid, r.ts)
			b = append(b, "\"fwdbwd\", \"name\": \"fwdbwd\"\n  }"...)
		} else {
			b = g.flowHead(b, cFwdBwd, phF, r.seq, g.pid, tid, r.ts)
			b = append(b, "\"fwdbwd\", \"name\": \"fwdbwd\", \"bp\": \"e\"\n  }"...)
		}
	}
	g.done(b)
}

func (g *gen) flowHead(b []byte, cat, ph int, id, pid, tid, ts int64) []byte {
	g.cats[cat]++
	g.phases[ph]++
	g.nEv++
	b = append(b, ",\n  {\n    \"ph\": \""...)
	b = append(b, phNames[ph]...)
	b = append(b, "\", \"id\": "...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, ", \"pid\": "...)
	b = strconv.AppendInt(b, pid, 10)
	b = append(b, ", \"tid\": "...)
	b = strconv.AppendInt(b, tid, 10)
	b = append(b, ", \"ts\": "...)
	b = appendUS(b, ts)
	return append(b, ",\n    \"cat\": "...)
}

func cbid(name uint16) int64 {
	switch name {
	case nLaunchKernel:
		return 211
	case nMemcpyAsync:
		return 41
	case nMemsetAsync:
		return 51
	case nStreamSync:
		return 131
	case nEventRecord:
		return 135
	case nStreamWaitEvent:
		return 147
	}
	return 317
}

func (g *gen) writeRuntime(r *rec) {
	b := g.sep(cRuntime, phX)
	tid := g.tids[r.th]
	b = xHead(b, cRuntime, r.name, -1, g.pid, tid, r.ts, r.dur)
	if r.ext != 0 {
		b = append(b, "\"External id\": "...)
		b = strconv.AppendInt(b, r.ext, 10)
		b = append(b, ",      "...)
	} else {
		b = append(b, "      "...)
	}
	b = append(b, "\"cbid\": "...)
	b = strconv.AppendInt(b, cbid(r.name), 10)
	b = append(b, ", \"correlation\": "...)
	b = strconv.AppendInt(b, r.corr, 10)
	b = append(b, argsTail...)
	if r.flags&fHasGPU != 0 {
		b = g.flowHead(b, cAC2G, phS, r.corr, g.pid, tid, r.ts)
		b = append(b, "\"ac2g\", \"name\": \"ac2g\"\n  }"...)
	}
	g.done(b)
}

func (g *gen) writeGPU(r *rec) {
	cat := cKernel
	switch r.kind {
	case kMemcpy:
		cat = cMemcpy
	case kMemset:
		cat = cMemset
	}
	b := g.sep(cat, phX)
	dev := int64(r.th)
	stream := g.streams[r.th][r.stream]
	b = xHead(b, cat, r.name, -1, dev, stream, r.ts, r.dur)
	b = append(b, "\"External id\": "...)
	b = strconv.AppendInt(b, r.ext, 10)
	if cat == cKernel {
		b = append(b, ",      \"queued\": 0, \"device\": "...)
	} else {
		b = append(b, ",      \"device\": "...)
	}
	b = strconv.AppendInt(b, dev, 10)
	b = append(b, ", \"context\": "...)
	b = strconv.AppendInt(b, dev+1, 10)
	b = append(b, ",      \"stream\": "...)
	b = strconv.AppendInt(b, stream, 10)
	b = append(b, ", \"correlation\": "...)
	b = strconv.AppendInt(b, r.corr, 10)
	if cat == cKernel {
		b = append(b, ",      "...)
		if g.opt.PerLaunchArgs {
			b = append(b, g.m.launchArgs(r.kern, r.corr)...)
		} else {
			b = append(b, g.m.kargs[r.kern]...)
		}
	} else {
		b = append(b, ",      \"bytes\": "...)
		b = strconv.AppendInt(b, r.a, 10)
		b = append(b, ", \"memory bandwidth (GB/s)\": "...)
		b = strconv.AppendFloat(b, float64(r.a)/float64(max(r.dur, 1)), 'g', -1, 64)
	}
	b = append(b, argsTail...)
	b = g.flowHead(b, cAC2G, phF, r.corr, dev, stream, r.ts)
	b = append(b, "\"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }"...)
	g.done(b)
}

func (g *gen) writeMem(r *rec) {
	b := g.sep(cInstant, phI)
	b = append(b, "  {\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\",\n    \"pid\": "...)
	b = strconv.AppendInt(b, g.pid, 10)
	b = append(b, ", \"tid\": "...)
	b = strconv.AppendInt(b, g.tids[r.stream], 10)
	b = append(b, ",\n    \"ts\": "...)
	b = appendUS(b, r.ts)
	b = append(b, ",\n    \"args\": {\n      \"Ev Idx\": "...)
	b = strconv.AppendInt(b, g.evIdx, 10)
	g.evIdx++
	if r.th == 2 {
		b = append(b, ", \"Device Type\": 0, \"Device Id\": -1, \"Addr\": "...)
	} else {
		b = append(b, ", \"Device Type\": 1, \"Device Id\": "...)
		b = strconv.AppendInt(b, int64(r.th), 10)
		b = append(b, ", \"Addr\": "...)
	}
	b = strconv.AppendInt(b, r.a, 10)
	b = append(b, ", \"Bytes\": "...)
	b = strconv.AppendInt(b, r.b, 10)
	b = append(b, ", \"Total Allocated\": "...)
	b = strconv.AppendInt(b, r.c, 10)
	b = append(b, ", \"Total Reserved\": "...)
	b = strconv.AppendInt(b, r.d, 10)
	b = append(b, argsTail...)
	g.done(b)
}

func (g *gen) writePy(r *rec) {
	b := g.sep(cPython, phX)
	if r.flags&fTiny != 0 { // one line, no spaces, the ids only: ~140 bytes
		b = append(b, `{"ph":"X","cat":"python_function","name":"`...)
		b = appendName(b, r.name, r.num)
		b = append(b, `","pid":`...)
		b = strconv.AppendInt(b, g.pid, 10)
		b = append(b, `,"tid":`...)
		b = strconv.AppendInt(b, g.tids[thMain], 10)
		b = append(b, `,"ts":`...)
		b = appendUS(b, r.ts)
		b = append(b, `,"dur":`...)
		b = appendUS(b, r.dur)
		b = append(b, `,"args":{"Python parent id":`...)
		b = strconv.AppendInt(b, r.b, 10)
		b = append(b, `,"Python id":`...)
		b = strconv.AppendInt(b, r.a, 10)
		g.done(append(b, "}}"...))
		return
	}
	b = xHead(b, cPython, r.name, r.num, g.pid, g.tids[thMain], r.ts, r.dur)
	b = append(b, "\"Python parent id\": "...)
	if r.flags&fNoParent != 0 {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, r.b, 10)
	}
	b = append(b, ", \"Python id\": "...)
	b = strconv.AppendInt(b, r.a, 10)
	b = append(b, ", \"Python thread\": 0, \"Ev Idx\": "...)
	b = strconv.AppendInt(b, g.evIdx, 10)
	g.evIdx++
	b = append(b, argsTail...)
	g.done(b)
}

func (g *gen) writeGPUAnn(r *rec) {
	b := g.sep(cGPUAnn, phX)
	b = xHead(b, cGPUAnn, r.name, r.num, int64(r.th), g.streams[r.th][r.stream], r.ts, r.dur)
	b = append(b, "\"External id\": "...)
	b = strconv.AppendInt(b, r.ext, 10)
	b = append(b, argsTail...)
	g.done(b)
}

func (g *gen) stats() Stats {
	st := Stats{
		Bytes:           g.bytes,
		Events:          g.nEv,
		ByCategory:      map[string]int64{},
		ByPhase:         map[string]int64{},
		Kernels:         g.cats[cKernel],
		Memcpys:         g.cats[cMemcpy],
		Memsets:         g.cats[cMemset],
		RuntimeCalls:    g.cats[cRuntime],
		CPUOps:          g.cats[cCPUOp],
		UserAnnotations: g.cats[cUserAnn],
		PythonFunctions: g.cats[cPython],
		MemoryEvents:    g.cats[cInstant],
		FlowPairs:       g.cats[cAC2G] / 2,
		FwdBwdPairs:     g.cats[cFwdBwd] / 2,
		KernelNs:        g.kernNs,
		Steps:           g.steps,
		Layers:          g.opt.Layers,
		MicroBatches:    g.opt.MicroBatches,
		Devices:         g.opt.Devices,
		WorldSize:       g.opt.WorldSize,
		BaseTimeNs:      g.baseNs,
		TraceStartNs:    g.t0,
		TraceEndNs:      g.t1,
	}
	for c, n := range g.cats {
		if n > 0 {
			st.ByCategory[catNames[c]] = n
		}
	}
	for p, n := range g.phases {
		if n > 0 {
			st.ByPhase[phNames[p]] = n
		}
	}
	return st
}
