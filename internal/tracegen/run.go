package tracegen

import (
	"fmt"
	"strconv"
	"strings"
)

// Autograd nodes a transformer block creates, in forward order; the
// sequence number of node k of block i in a micro-batch is
// base + 1 + seqPerBlock*i + k (base: the embedding's).
const (
	sLN1 = iota
	sQKV // t, then addmm at +1
	_
	sSDPA
	sProj // t, addmm
	_
	sAdd1
	sLN2
	sFC1 // t, addmm
	_
	sGelu
	sFC2 // t, addmm
	_
	sDropout
	sAdd2
	seqPerBlock
)

const seqHead = 5 // ln_f, t, mm, log_softmax, nll_loss

func (g *gen) run() {
	g.header()
	g.cur[thMain] += g.jit(40000)
	r0 := g.py(pyRoot0, -1)
	r1 := g.py(pyRoot1, -1)
	r2 := g.py(pyMain, -1)
	r3 := g.py(pyTrainLoop, -1)
	first := 1 + int(g.rand()%200)
	for s := range g.opt.Steps {
		if g.stop {
			break
		}
		g.step(first + s)
	}
	g.end(r3)
	g.end(r2)
	g.end(r1)
	g.end(r0)
	g.flushRecs()
	g.trailer()
}

// finish flushes the buffer and waits for the writer.
func (g *gen) finish() error {
	g.flushBuf()
	if g.aw == nil {
		return nil
	}
	close(g.aw.ch)
	<-g.aw.done
	return g.aw.failed()
}

func (g *gen) header() {
	b := g.buf
	b = append(b, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n"...)
	for d := range g.opt.Devices {
		if d > 0 {
			b = append(b, ",\n"...)
		}
		b = append(b, "    {\n      \"id\": "...)
		b = strconv.AppendInt(b, int64(d), 10)
		b = append(b, `, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132
    , "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472
    }`...)
	}
	b = append(b, "\n  ],\n"...)
	ws := g.opt.WorldSize
	ranks := make([]string, ws)
	for i := range ranks {
		ranks[i] = strconv.Itoa(i)
	}
	backend := "nccl"
	if ws == 1 {
		backend = "gloo"
	}
	b = fmt.Appendf(b, `  "distributedInfo": {"backend": %q, "rank": 0, "world_size": %d, "pg_count": 1, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:%s", "pg_size": %d, "ranks": [%s]}], "nccl_version": "2.21.5"},
  "cupti_version": 22,
  "cuda_runtime_version": 12040,
  "cuda_driver_version": 12090,
  "with_flops": 1,
  "with_modules": 1,
  "record_shapes": 1,
  "profile_memory": 1,
  "with_stack": 1,
  "trace_id": "%016X%016X",
  "tracegen": {"seed": %d, "layers": %d, "micro_batches": %d, "steps": %d, "model": "GPT d_model=%d seq=%d batch=%d vocab=%d"},
  "traceEvents": [
`, backend, ws, backend, ws, strings.Join(ranks, ", "), g.rand(), g.rand(), g.opt.Seed,
		g.opt.Layers, g.opt.MicroBatches, g.opt.Steps, g.m.H, g.m.S, g.m.B, g.m.V)
	g.buf = b
}

func (g *gen) trailer() {
	g.t1 = max(g.cur[thMain], g.cur[thBwd], g.busy[0][0], g.busy[0][1], g.busy[1][0], g.busy[1][1]) + g.jit(80000)
	// Metadata rows, as Kineto writes them at the end.
	meta := func(name uint16, pid, tid int64, key, val string, num int64) {
		b := g.sep(cNone, phM)
		b = append(b, "  {\n    \"name\": \""...)
		b = append(b, names[name]...)
		b = append(b, "\", \"ph\": \"M\", \"ts\": "...)
		b = appendUS(b, g.t0)
		b = append(b, ", \"pid\": "...)
		b = strconv.AppendInt(b, pid, 10)
		b = append(b, ", \"tid\": "...)
		b = strconv.AppendInt(b, tid, 10)
		b = append(b, ",\n    \"args\": {\n      \""...)
		b = append(b, key...)
		b = append(b, "\": "...)
		if val != "" || num < 0 {
			b = strconv.AppendQuote(b, val)
		} else {
			b = strconv.AppendInt(b, num, 10)
		}
		b = append(b, argsTail...)
		g.done(b)
	}
	meta(nProcName, g.pid, 0, "name", "python3", 0)
	meta(nProcLabels, g.pid, 0, "labels", "CPU", 0)
	meta(nProcSort, g.pid, 0, "sort_index", "", g.pid)
	for d := range int64(g.opt.Devices) {
		meta(nProcName, d, 0, "name", "python3", 0)
		meta(nProcLabels, d, 0, "labels", "GPU "+strconv.FormatInt(d, 10), 0)
		meta(nProcSort, d, 0, "sort_index", "", 5000000+d)
		for _, s := range g.streams[d] {
			meta(nThreadName, d, s, "name", "stream "+strconv.FormatInt(s, 10)+" ", 0)
			meta(nThreadSort, d, s, "sort_index", "", s)
		}
	}
	meta(nThreadName, g.pid, g.tids[thMain], "name", "thread "+strconv.FormatInt(g.tids[thMain], 10)+" (python3)", 0)
	meta(nThreadSort, g.pid, g.tids[thMain], "sort_index", "", g.tids[thMain])
	meta(nThreadName, g.pid, g.tids[thBwd], "name", "thread "+strconv.FormatInt(g.tids[thBwd], 10)+" (pt_autograd_0)", 0)
	meta(nThreadSort, g.pid, g.tids[thBwd], "sort_index", "", g.tids[thBwd])

	b := g.sep(cTrace, phX)
	b = append(b, "  {\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": "...)
	b = appendUS(b, g.t0)
	b = append(b, ", \"dur\": "...)
	b = appendUS(b, g.t1-g.t0)
	b = append(b, ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n    \"args\": {\n      \"Op count\": 0\n    }\n  }"...)
	g.buf = b
	b = g.sep(cNone, phM)
	b = append(b, "  {\n    \"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": "...)
	b = appendUS(b, g.t0)
	b = append(b, ",\n    \"pid\": \"Spans\", \"tid\": 0,\n    \"args\": {\n      \"sort_index\": 536870912\n    }\n  }"...)
	g.buf = b
	b = g.sep(cNone, phI)
	b = append(b, "  {\n    \"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": "...)
	b = appendUS(b, g.t0)
	b = append(b, "\n  }"...)
	g.buf = b
	b = g.sep(cNone, phI)
	b = append(b, "  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", \"ts\": "...)
	b = appendUS(b, g.t1+g.jit(2000000))
	b = append(b, "\n  }\n  ],\n  \"traceName\": \"/tmp/bottleneck_trace_"...)
	b = strconv.AppendInt(b, g.pid, 10)
	b = append(b, ".pt.trace.json\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": "...)
	b = strconv.AppendInt(b, g.baseNs, 10)
	b = append(b, "\n}\n"...)
	g.done(b)
}

// ---- one training step -----------------------------------------------------

func (g *gen) step(num int) {
	D := g.opt.Devices
	g.pyLeaf(pyProfStep)
	st := g.ann(thMain, nProfilerStep, int32(num))
	start, stepExt := g.at(st).ts, g.at(st).ext
	g.stepKern, g.stepGPU = 0, 0
	g.gpuLo, g.gpuHi = [2]int64{}, [2]int64{}

	if g.opt.OpsPerStep > 0 {
		g.shortLoop()
	} else {
		g.zeroGrad()
		for mb := range g.opt.MicroBatches {
			if g.stop {
				break
			}
			g.microBatch(mb == g.opt.MicroBatches-1)
		}
		g.optimizerStep()
	}
	g.lossItem()
	g.end(st)
	g.steps = append(g.steps, Step{Num: num, StartNs: start, EndNs: g.cur[thMain], Kernels: g.stepKern, GPUEvents: g.stepGPU})
	for d := range D {
		if g.gpuHi[d] > 0 {
			g.push(rec{kind: kGPUAnn, name: nProfilerStep, num: int32(num), ts: g.gpuLo[d], dur: g.gpuHi[d] - g.gpuLo[d], ext: stepExt, th: uint8(d), seq: -1})
		}
	}
	// The Python loop between steps.
	p := g.py(pyIsInst, -1)
	g.cur[thMain] += g.jit(2000)
	g.end(p)
	g.cur[thMain] += g.jit(25000)
}

// shortLoop is the body of a step of Options.OpsPerStep: a DataLoader
// fetch and OpsPerStep element-wise ops of one kernel each.
func (g *gen) shortLoop() {
	p := g.py(pyDLNext, -1)
	a := g.ann(thMain, nDataLoader, -1)
	g.cur[thMain] += g.jit(20_000)
	g.end(a)
	g.end(p)
	for range g.opt.OpsPerStep {
		o := g.op(thMain, nAdd, g.m.frag.add)
		g.launch(thMain, kAdd, 0, 0)
		g.end(o)
	}
}

func (g *gen) zeroGrad() {
	m := &g.m
	p := g.py(pyZeroGrad, -1)
	a := g.ann(thMain, nZeroGrad, -1)
	for i := range 2 {
		z := g.op(thMain, nZero, m.frag.zero)
		f := g.op(thMain, nFill, m.frag.fill)
		if i == 0 {
			g.memset(thMain, 0, m.V*m.H*2)
		} else {
			g.launch(thMain, kFill, g.opt.Devices-1, 0)
		}
		g.end(f)
		g.end(z)
	}
	g.end(a)
	g.end(p)
}

func (g *gen) microBatch(last bool) {
	m := &g.m
	D, L := g.opt.Devices, g.opt.Layers
	f := &m.frag

	// Input pipeline: DataLoader.__next__, occasionally slow.
	p := g.py(pyDLNext, -1)
	a := g.ann(thMain, nDataLoader, -1)
	p2 := g.py(pyDLNextData, -1)
	p3 := g.py(pyFetch, -1)
	if g.chance(12) {
		g.cur[thMain] += g.jit(9_000_000)
	} else {
		g.cur[thMain] += g.jit(120_000)
	}
	p4 := g.py(pyCollate, -1)
	for range 2 {
		s := g.op(thMain, nStack, f.stack)
		g.malloc(thMain, -1, m.N*8)
		c := g.op(thMain, nCat, f.catCPU)
		g.cur[thMain] += g.jit(35_000)
		g.end(c)
		g.end(s)
	}
	g.end(p4)
	g.end(p3)
	g.end(p2)
	g.end(a)
	g.end(p)

	// Host-to-device copies of input ids and labels.
	inMark := [2]int{g.liveCount(0), g.liveCount(D - 1)}
	for i := range 2 {
		dev := 0
		if i == 1 {
			dev = D - 1
		}
		pt := g.py(pyTo, -1)
		t := g.op(thMain, nTo, f.to)
		tc := g.op(thMain, nToCopy, f.toCopy)
		e := g.op(thMain, nEmptyStrided, f.emptyIn)
		g.malloc(thMain, dev, m.N*8)
		g.end(e)
		c := g.op(thMain, nCopy, f.copyIn)
		g.memcpy(thMain, nMemcpyHtoD, dev, 0, m.N*8, 22, 0)
		g.end(c)
		g.end(tc)
		g.end(t)
		g.end(pt)
	}
	g.free(thMain, -1, 2)

	// Forward.
	seq0 := g.seqNum
	g.seqNum += 1 + seqPerBlock*int64(L) + seqHead
	marks := make([]int, L) // small: L <= a few hundred
	var pd [3]hnd
	var pdf, ddp hnd
	if g.opt.WorldSize > 1 {
		pd = g.module(nModDDP, 0)
		pdf = g.py(pyDDPFwd, -1)
		ddp = g.ann(thMain, nDDPForward, -1)
	}
	pm := g.module(nModModel, 0)
	pmf := g.py(pyModelFwd, -1)
	embMark := g.liveCount(0)
	g.embedding(seq0)
	prev := 0
	for i := range L {
		dev := i * D / L
		marks[i] = g.liveCount(dev)
		if dev != prev {
			g.transfer(thMain, prev, dev)
			prev = dev
		}
		g.blockFwd(i, dev, seq0+1+seqPerBlock*int64(i))
	}
	headSeq := seq0 + 1 + seqPerBlock*int64(L)
	headMark := g.liveCount(D - 1)
	g.headFwd(headSeq)
	g.end(pmf)
	g.endModule(pm)
	if g.opt.WorldSize > 1 {
		g.end(ddp)
		g.end(pdf)
		g.endModule(pd)
	}
	g.lossFwd(headSeq)

	// Backward: the main thread waits in run_backward while the autograd
	// thread runs the nodes.
	b1 := g.py(pyBackward, -1)
	b2 := g.py(pyAGBackward, -1)
	b3 := g.py(pyEngineRun, -1)
	b4 := g.py(pyRunBwdBI, -1)
	g.cur[thBwd] = max(g.cur[thBwd], g.cur[thMain]) + g.jit(9000)
	g.headBwd(headSeq, headMark)
	comm := last && g.opt.WorldSize > 1
	for i := L - 1; i >= 0; i-- {
		dev := i * D / L
		g.blockBwd(i, dev, seq0+1+seqPerBlock*int64(i))
		g.freeTo(thBwd, dev, marks[i])
		if comm && (i%4 == 0 || (i > 0 && (i-1)*D/L != dev)) {
			g.allReduce(dev)
		}
		if i > 0 && (i-1)*D/L != dev {
			g.transfer(thBwd, dev, (i-1)*D/L)
		}
	}
	g.embeddingBwd(seq0)
	g.freeTo(thBwd, 0, embMark)
	if comm {
		g.allReduce(0)
	}
	g.cur[thMain] = max(g.cur[thMain], g.cur[thBwd]) + g.jit(6000)
	g.end(b4)
	g.end(b3)
	g.end(b2)
	g.end(b1)
	g.freeTo(thMain, D-1, inMark[1])
	g.freeTo(thMain, 0, inMark[0])
}

// module opens the frames of one nn.Module call: _wrapped_call_impl,
// _call_impl and the "nn.Module: X_n" frame itself; close with endModule.
func (g *gen) module(name uint16, num int32) [3]hnd {
	return [3]hnd{g.py(pyWrapped, -1), g.py(pyCallImpl, -1), g.py(name, num)}
}

func (g *gen) endModule(h [3]hnd) {
	g.end(h[2])
	g.end(h[1])
	g.end(h[0])
}

// transfer copies an activation (or its gradient) between GPUs.
func (g *gen) transfer(th, from, to int) {
	f := &g.m.frag
	bytes := g.m.N * g.m.H * 2
	t := g.op(th, nTo, f.toDev)
	tc := g.op(th, nToCopy, f.toCopyDev)
	e := g.op(th, nEmptyStrided, f.emptyDev)
	g.malloc(th, to, bytes)
	g.end(e)
	c := g.op(th, nCopy, f.copyDev)
	g.memcpy(th, nMemcpyPtoP, to, 0, bytes, 150, g.busy[from][0])
	g.end(c)
	g.end(tc)
	g.end(t)
}

func (g *gen) embedding(seq int64) {
	m := &g.m
	pe := g.module(nModEmbedding, 0)
	pef := g.py(pyEmbFwd, -1)
	pfn := g.py(pyEmbFunc, -1)
	pbi := g.py(pyEmbBI, -1)
	e := g.fwd(nEmbedding, m.frag.embedding, seq)
	is := g.op(thMain, nIndexSelect, m.frag.indexSelect)
	g.malloc(thMain, 0, m.N*m.H*2)
	g.launch(thMain, kIndexSelect, 0, 0)
	g.end(is)
	g.leaf(thMain, nView, m.frag.embView, 900)
	g.end(e)
	g.end(pbi)
	g.end(pfn)
	g.end(pef)
	g.endModule(pe)
}

func (g *gen) linearFwd(dev, which int, mod int32, seq int64) {
	m := &g.m
	l := &m.lin[which]
	pl := g.module(nModLinear, mod)
	pf := g.py(pyLinearFwd, -1)
	g.pyLeaf(pyGetattr)
	pbi := g.py(pyLinearBI, -1)
	lo := g.op(thMain, nLinear, l.fLinear)
	t := g.fwd(nT, l.fT, seq)
	tr := g.op(thMain, nTranspose, l.fTranspose)
	g.leaf(thMain, nAsStrided, l.fAsStrided, 500)
	g.end(tr)
	g.end(t)
	g.leaf(thMain, nView, l.fView, 800)
	a := g.fwd(nAddmm, l.fAddmm, seq+1)
	g.malloc(thMain, dev, m.N*l.out*2)
	g.launchNs(thMain, l.k, dev, 0, l.fwdNs)
	g.end(a)
	g.leaf(thMain, nView, l.fViewOut, 800)
	g.end(lo)
	g.end(pbi)
	g.end(pf)
	g.endModule(pl)
}

func (g *gen) layerNorm(dev int, mod int32, seq int64) {
	m := &g.m
	pl := g.module(nModLN, mod)
	pf := g.py(pyLNFwd, -1)
	pfn := g.py(pyLNFunc, -1)
	pbi := g.py(pyLNBI, -1)
	o := g.op(thMain, nLayerNorm, m.frag.ln)
	n := g.fwd(nNativeLayerNorm, m.frag.nativeLN, seq)
	g.malloc(thMain, dev, m.N*m.H*2)
	g.malloc(thMain, dev, m.N*4)
	g.malloc(thMain, dev, m.N*4)
	g.launch(thMain, kLayerNorm, dev, 0)
	g.end(n)
	g.end(o)
	g.end(pbi)
	g.end(pfn)
	g.end(pf)
	g.endModule(pl)
}

func (g *gen) blockFwd(i, dev int, s0 int64) {
	m := &g.m
	f := &m.frag
	n := int32(i)
	pb := g.module(nModBlock, n)
	pbf := g.py(pyBlockFwd, -1)
	g.layerNorm(dev, 2*n, s0+sLN1)

	pa := g.module(nModAttn, n)
	paf := g.py(pyAttnFwd, -1)
	g.linearFwd(dev, linQKV, 4*n, s0+sQKV)
	for range 3 { // q, k, v: view + transpose
		pv := g.py(pyView, -1)
		g.leaf(thMain, nView, f.viewHeads, 900)
		g.end(pv)
		pt := g.py(pyTransposeM, -1)
		tr := g.op(thMain, nTranspose, f.transposeHeads)
		g.leaf(thMain, nAsStrided, f.asStridedHeads, 450)
		g.end(tr)
		g.end(pt)
	}
	ps := g.py(pySDPABI, -1)
	sd := g.op(thMain, nSDPA, f.sdpa)
	fl := g.fwd(nSDPAFlash, f.sdpaFlash, s0+sSDPA)
	ff := g.op(thMain, nFlashFwd, f.flashFwd)
	e := g.op(thMain, nEmpty, f.emptyAct)
	g.malloc(thMain, dev, m.N*m.H*2)
	g.end(e)
	e = g.op(thMain, nEmpty, f.emptyLse)
	g.malloc(thMain, dev, m.B*m.NH*m.S*4)
	g.end(e)
	g.launch(thMain, kFlashFwd, dev, 0)
	g.end(ff)
	g.end(fl)
	g.end(sd)
	g.end(ps)
	// merge heads: transpose(1, 2).contiguous().view(...)
	pt := g.py(pyTransposeM, -1)
	tr := g.op(thMain, nTranspose, f.transposeHeads)
	g.leaf(thMain, nAsStrided, f.asStridedHeads, 450)
	g.end(tr)
	g.end(pt)
	pc := g.py(pyContig, -1)
	ct := g.op(thMain, nContiguous, f.contiguous)
	cl := g.op(thMain, nClone, f.clone)
	el := g.op(thMain, nEmptyLike, f.emptyLike)
	es := g.op(thMain, nEmptyStrided, f.emptyStrided)
	g.malloc(thMain, dev, m.N*m.H*2)
	g.end(es)
	g.end(el)
	cp := g.op(thMain, nCopy, f.copyAct)
	g.launch(thMain, kCopy, dev, 0)
	g.end(cp)
	g.end(cl)
	g.end(ct)
	g.end(pc)
	g.linearFwd(dev, linProj, 4*n+1, s0+sProj)
	g.end(paf)
	g.endModule(pa)

	g.addFwd(dev, s0+sAdd1)
	g.layerNorm(dev, 2*n+1, s0+sLN2)

	pm := g.module(nModMLP, n)
	pmf := g.py(pyMLPFwd, -1)
	g.linearFwd(dev, linFC1, 4*n+2, s0+sFC1)
	pg := g.module(nModGELU, n)
	pgf := g.py(pyGeluFwd, -1)
	pgb := g.py(pyGeluBI, -1)
	ge := g.fwd(nGelu, f.gelu, s0+sGelu)
	g.malloc(thMain, dev, m.N*m.F*2)
	g.launch(thMain, kGelu, dev, 0)
	g.end(ge)
	g.end(pgb)
	g.end(pgf)
	g.endModule(pg)
	g.linearFwd(dev, linFC2, 4*n+3, s0+sFC2)
	pd := g.module(nModDropout, n)
	pdf := g.py(pyDropFwd, -1)
	pdn := g.py(pyDropFunc, -1)
	pdb := g.py(pyDropBI, -1)
	dr := g.op(thMain, nDropout, f.dropout)
	nd := g.fwd(nNativeDropout, f.nDropout, s0+sDropout)
	g.malloc(thMain, dev, m.N*m.H*2)
	g.malloc(thMain, dev, m.N*m.H)
	g.launch(thMain, kDropout, dev, 0)
	g.end(nd)
	g.end(dr)
	g.end(pdb)
	g.end(pdn)
	g.end(pdf)
	g.endModule(pd)
	g.end(pmf)
	g.endModule(pm)

	g.addFwd(dev, s0+sAdd2)
	g.end(pbf)
	g.endModule(pb)
}

func (g *gen) addFwd(dev int, seq int64) {
	a := g.fwd(nAdd, g.m.frag.add, seq)
	g.malloc(thMain, dev, g.m.N*g.m.H*2)
	g.launch(thMain, kAdd, dev, 0)
	g.end(a)
}

func (g *gen) headFwd(seq int64) {
	m := &g.m
	dev := g.opt.Devices - 1
	L := int32(g.opt.Layers)
	g.layerNorm(dev, 2*L, seq)
	l := &m.lin[linHead]
	pl := g.module(nModLinear, 4*L)
	pf := g.py(pyLinearFwd, -1)
	pbi := g.py(pyLinearBI, -1)
	lo := g.op(thMain, nLinear, l.fLinear)
	t := g.fwd(nT, l.fT, seq+1)
	tr := g.op(thMain, nTranspose, l.fTranspose)
	g.leaf(thMain, nAsStrided, l.fAsStrided, 500)
	g.end(tr)
	g.end(t)
	mt := g.op(thMain, nMatmul, m.frag.headMatmul)
	g.leaf(thMain, nView, l.fView, 800)
	mm := g.fwd(nMm, l.fAddmm, seq+2)
	g.malloc(thMain, dev, m.N*m.V*2)
	g.launchNs(thMain, kGemmHead, dev, 0, l.fwdNs)
	g.end(mm)
	g.leaf(thMain, nUnsafeView, m.frag.unsafe, 900)
	g.end(mt)
	g.end(lo)
	g.end(pbi)
	g.end(pf)
	g.endModule(pl)
}

func (g *gen) lossFwd(seq int64) {
	m := &g.m
	f := &m.frag
	dev := g.opt.Devices - 1
	pce := g.py(pyCrossEnt, -1)
	pbi := g.py(pyCrossEntBI, -1)
	ce := g.op(thMain, nCrossEntropy, f.crossEntropy)
	ls := g.fwd(nLogSoftmax, f.logSoftmax, seq+3)
	li := g.op(thMain, nLogSoftmaxImpl, f.logSoftmax)
	g.malloc(thMain, dev, m.N*m.V*2)
	g.launch(thMain, kSoftmax, dev, 0)
	g.end(li)
	g.end(ls)
	nd := g.op(thMain, nNllLossNd, f.nllNd)
	nl := g.fwd(nNllLoss, f.nll, seq+4)
	nf := g.op(thMain, nNllLossFwd, f.nllFwd)
	g.malloc(thMain, dev, 2)
	g.malloc(thMain, dev, 4)
	g.launch(thMain, kNllFwd, dev, 0)
	g.end(nf)
	g.end(nl)
	g.end(nd)
	g.end(ce)
	g.end(pbi)
	g.end(pce)
}

// ---- backward thread ----------------------------------------------------

// node opens an autograd node (evaluate_function wrapper + the node).
func (g *gen) node(n bwdNode, seq int64) (hnd, hnd) {
	e := g.op(thBwd, n.eval, 0)
	g.at(e).seq = seq
	h := g.op(thBwd, n.node, 0)
	r := g.at(h)
	r.seq = seq
	r.flags |= fFlowF
	return e, h
}

func (g *gen) endNode(e, n hnd) {
	g.end(n)
	g.end(e)
}

func (g *gen) accumulate(dev int) {
	e := g.op(thBwd, bAccumulate.eval, 0)
	n := g.op(thBwd, bAccumulate.node, 0)
	a := g.op(thBwd, nAddInplace, g.m.frag.addGrad)
	g.launch(thBwd, kAddInplace, dev, 0)
	g.end(a)
	g.end(n)
	g.end(e)
}

func (g *gen) tBwd(l *linear, seq int64) {
	e, n := g.node(bT, seq)
	t := g.op(thBwd, nT, l.fT)
	tr := g.op(thBwd, nTranspose, l.fTranspose)
	g.leaf(thBwd, nAsStrided, l.fAsStrided, 450)
	g.end(tr)
	g.end(t)
	g.endNode(e, n)
}

func (g *gen) linearBwd(dev, which int, seq int64) {
	m := &g.m
	l := &m.lin[which]
	nd := bAddmm
	if which == linHead {
		nd = bMm
	}
	e, n := g.node(nd, seq+1)
	t := g.op(thBwd, nT, l.fT)
	g.leaf(thBwd, nTranspose, l.fTranspose, 900)
	g.end(t)
	mm := g.op(thBwd, nMm, l.fMmDgrad)
	g.malloc(thBwd, dev, m.N*l.in*2)
	g.launchNs(thBwd, kGemmDgrad, dev, 0, l.dgradNs)
	g.end(mm)
	t = g.op(thBwd, nT, l.fT)
	g.leaf(thBwd, nTranspose, l.fTranspose, 900)
	g.end(t)
	mm = g.op(thBwd, nMm, l.fMmWgrad)
	g.malloc(thBwd, dev, l.out*l.in*2)
	g.launchNs(thBwd, kGemmWgrad, dev, 0, l.wgradNs)
	g.end(mm)
	if which != linHead {
		s := g.op(thBwd, nSum, l.fSum)
		g.malloc(thBwd, dev, l.out*2)
		g.launch(thBwd, kReduceSum, dev, 0)
		g.end(s)
		g.leaf(thBwd, nView, l.fViewOut, 700)
	}
	g.endNode(e, n)
	g.accumulate(dev)
	if which != linHead {
		g.accumulate(dev)
	}
	g.tBwd(l, seq)
}

func (g *gen) layerNormBwd(dev int, seq int64) {
	m := &g.m
	e, n := g.node(bLayerNorm, seq)
	o := g.op(thBwd, nLayerNormBwd, m.frag.lnBwd)
	g.malloc(thBwd, dev, m.N*m.H*2)
	g.malloc(thBwd, dev, m.H*2)
	g.malloc(thBwd, dev, m.H*2)
	g.launch(thBwd, kLayerNormBwdInput, dev, 0)
	g.launch(thBwd, kLayerNormBwdGamma, dev, 0)
	g.end(o)
	g.endNode(e, n)
	g.accumulate(dev)
	g.accumulate(dev)
}

func (g *gen) headBwd(seq int64, mark int) {
	m := &g.m
	f := &m.frag
	dev := g.opt.Devices - 1
	e, n := g.node(bNllLoss, seq+4)
	o := g.op(thBwd, nNllLossBwd, f.nllBwd)
	g.malloc(thBwd, dev, m.N*m.V*2)
	z := g.op(thBwd, nZero, f.zero)
	g.launch(thBwd, kFill, dev, 0)
	g.end(z)
	g.launch(thBwd, kNllBwd, dev, 0)
	g.end(o)
	g.endNode(e, n)
	e, n = g.node(bLogSoftmax, seq+3)
	o = g.op(thBwd, nLogSoftmaxBwd, f.logSoftmaxBwd)
	g.malloc(thBwd, dev, m.N*m.V*2)
	g.launch(thBwd, kSoftmaxBwd, dev, 0)
	g.end(o)
	g.endNode(e, n)
	g.linearBwd(dev, linHead, seq+1)
	g.layerNormBwd(dev, seq)
	g.freeTo(thBwd, dev, mark)
}

func (g *gen) blockBwd(i, dev int, s0 int64) {
	m := &g.m
	f := &m.frag
	e, n := g.node(bAdd, s0+sAdd2)
	g.endNode(e, n)

	e, n = g.node(bDropout, s0+sDropout)
	o := g.op(thBwd, nNativeDropoutBwd, f.dropoutBwd)
	mu := g.op(thBwd, nMul, f.mulMask)
	g.malloc(thBwd, dev, m.N*m.H*2)
	g.launch(thBwd, kDropoutBwd, dev, 0)
	g.end(mu)
	g.end(o)
	g.endNode(e, n)

	g.linearBwd(dev, linFC2, s0+sFC2)

	e, n = g.node(bGelu, s0+sGelu)
	o = g.op(thBwd, nGeluBwd, f.geluBwd)
	g.malloc(thBwd, dev, m.N*m.F*2)
	g.launch(thBwd, kGeluBwd, dev, 0)
	g.end(o)
	g.endNode(e, n)

	g.linearBwd(dev, linFC1, s0+sFC1)
	g.layerNormBwd(dev, s0+sLN2)
	e, n = g.node(bAdd, s0+sAdd1)
	g.endNode(e, n)
	g.linearBwd(dev, linProj, s0+sProj)

	e, n = g.node(bFlash, s0+sSDPA)
	o = g.op(thBwd, nSDPAFlashBwd, f.flashBwd)
	fb := g.op(thBwd, nFlashBwd, f.flashBwd2)
	for range 3 {
		em := g.op(thBwd, nEmpty, f.emptyAct)
		g.malloc(thBwd, dev, m.N*m.H*2)
		g.end(em)
	}
	em := g.op(thBwd, nEmpty, f.emptyLse)
	g.malloc(thBwd, dev, m.B*m.NH*m.S*4)
	g.end(em)
	g.launch(thBwd, kFlashBwdDotDoO, dev, 0)
	g.launch(thBwd, kFlashBwd, dev, 0)
	g.launch(thBwd, kFlashBwdConvertDq, dev, 0)
	g.end(fb)
	g.end(o)
	g.endNode(e, n)

	g.linearBwd(dev, linQKV, s0+sQKV)
	g.layerNormBwd(dev, s0+sLN1)
}

func (g *gen) embeddingBwd(seq int64) {
	m := &g.m
	e, n := g.node(bEmbedding, seq)
	o := g.op(thBwd, nEmbeddingBwd, m.frag.embBwd)
	d := g.op(thBwd, nEmbeddingDense, m.frag.embDense)
	g.malloc(thBwd, 0, m.V*m.H*2)
	g.launch(thBwd, kFill, 0, 0)
	g.launch(thBwd, kEmbeddingBwd, 0, 0)
	g.end(d)
	g.end(o)
	g.endNode(e, n)
	g.accumulate(0)
}

// allReduce is DDP's gradient bucket all-reduce: NCCL on the comm stream,
// ordered after the compute stream's work.
func (g *gen) allReduce(dev int) {
	rc := g.op(thBwd, nRecordComms, g.m.frag.comms)
	a := g.ann(thBwd, nAllReduce, -1)
	g.plainRT(thBwd, nEventRecord, 2500)
	g.plainRT(thBwd, nStreamWaitEvent, 1800)
	g.launchAfter(thBwd, kNcclAllReduce, dev, 1, g.busy[dev][0])
	g.end(a)
	g.end(rc)
}

func (g *gen) optimizerStep() {
	m := &g.m
	D := g.opt.Devices
	p := g.py(pyOptWrapper, -1)
	a := g.ann(thMain, nOptStep, -1)
	ext := g.at(a).ext
	p2 := g.py(pyOptStep, -1)
	p3 := g.py(pyFusedAdamW, -1)
	g.inOpt = true
	g.optLo, g.optHi = [2]int64{}, [2]int64{}
	for d := range D {
		if g.opt.WorldSize > 1 {
			g.plainRT(thMain, nStreamWaitEvent, 1500)
			g.busy[d][0] = max(g.busy[d][0], g.busy[d][1])
		}
		o := g.op(thMain, nFusedAdamW, m.frag.adamw)
		for range 1 + g.opt.Layers/(4*D) {
			g.launch(thMain, kAdamW, d, 0)
		}
		g.end(o)
	}
	g.inOpt = false
	g.end(p3)
	g.end(p2)
	g.end(a)
	g.end(p)
	for d := range D {
		if g.optHi[d] > 0 {
			g.push(rec{kind: kGPUAnn, name: nOptStep, num: -1, ts: g.optLo[d], dur: g.optHi[d] - g.optLo[d], ext: ext, th: uint8(d), seq: -1})
		}
	}
}

// lossItem is loss.item(): a blocking device-to-host copy and a sync.
func (g *gen) lossItem() {
	m := &g.m
	dev := g.opt.Devices - 1
	p := g.py(pyItem, -1)
	it := g.op(thMain, nItem, m.frag.item)
	ls := g.op(thMain, nLocalScalar, m.frag.item)
	g.memcpy(thMain, nMemcpyDtoH, dev, 0, 2, 1, 0)
	g.streamSync(thMain, dev, 0)
	g.end(ls)
	g.end(it)
	g.end(p)
}
