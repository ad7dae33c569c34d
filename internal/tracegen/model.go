package tracegen

import (
	"fmt"
	"strconv"
	"strings"
)

// model holds the simulated network's sizes and everything rendered once
// from them: the "Input Dims"/"Input type"/... fragments of each op, the
// launch geometry of each kernel and its typical duration.
type model struct {
	B, S, H, F, V, NH, N int64
	L, D                 int
	numSms               int64
	baseline             int64 // bytes allocated before the trace starts (weights, grads, Adam state)

	frags  []string
	kargs  [numKerns]string
	kspec  [numKerns]kernelSpec // for PerLaunchArgs
	kextra [numKerns]string     // args after the launch geometry (NCCL's)
	kdur   [numKerns]int64

	lin  [5]linear // qkv, proj, fc1, fc2, head
	frag struct {
		embedding, indexSelect, embView, ln, nativeLN, lnBwd         uint16
		viewHeads, transposeHeads, asStridedHeads, sdpa, sdpaFlash   uint16
		flashFwd, emptyAct, emptyLse, contiguous, clone, emptyLike   uint16
		emptyStrided, copyAct, add, gelu, geluBwd, dropout, nDropout uint16
		dropoutBwd, flashBwd, flashBwd2, logSoftmax, logSoftmaxBwd   uint16
		crossEntropy, nllNd, nll, nllFwd, nllBwd, headMatmul, unsafe uint16
		stack, catCPU, to, toCopy, emptyIn, copyIn, toDev, toCopyDev uint16
		emptyDev, copyDev, zero, fill, adamw, item, comms, addGrad   uint16
		embBwd, embDense, mulMask                                    uint16
	}
}

type linear struct {
	in, out                                            int64
	k                                                  kernID
	fwdNs, dgradNs, wgradNs                            int64
	fLinear, fT, fTranspose, fAsStrided, fAddmm, fView uint16
	fViewOut, fMmDgrad, fMmWgrad, fSum                 uint16
}

const (
	linQKV = iota
	linProj
	linFC1
	linFC2
	linHead
)

func (m *model) add(s string) uint16 {
	m.frags = append(m.frags, s)
	return uint16(len(m.frags) - 1)
}

// An arg is one input of an op as record_shapes shows it.
type arg struct {
	dims []int64 // nil: not a tensor
	typ  string
	conc string
}

const bf16 = "c10::BFloat16"

func tns(typ string, d ...int64) arg { return arg{dims: d, typ: typ} }
func bf(d ...int64) arg              { return tns(bf16, d...) }
func sc(typ, conc string) arg        { return arg{typ: typ, conc: conc} }

// shapes renders args the way Kineto writes them (one line, native order).
func shapes(args ...arg) string {
	var b strings.Builder
	list := func(key string, f func(a arg)) {
		b.WriteString(`"` + key + `": [`)
		for i, a := range args {
			if i > 0 {
				b.WriteString(", ")
			}
			f(a)
		}
		b.WriteString("]")
	}
	ints := func(v []int64) {
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.FormatInt(x, 10))
		}
		b.WriteByte(']')
	}
	list("Concrete Inputs", func(a arg) { b.WriteString(strconv.Quote(a.conc)) })
	b.WriteString(", ")
	list("Input type", func(a arg) { b.WriteString(strconv.Quote(a.typ)) })
	b.WriteString(", ")
	list("Input Strides", func(a arg) {
		st := make([]int64, len(a.dims))
		acc := int64(1)
		for i := len(a.dims) - 1; i >= 0; i-- {
			st[i] = acc
			acc *= a.dims[i]
		}
		ints(st)
	})
	b.WriteString(", ")
	list("Input Dims", func(a arg) { ints(a.dims) })
	return b.String()
}

func gemmNs(m, n, k int64) int64 { return 2*m*n*k/450000 + 2500 }
func memNs(bytes int64) int64    { return bytes/2600 + 1800 }

type kernelSpec struct {
	regs, smem  int64
	grid, block [3]int64
	ns          int64
}

// launchArgs are kernel k's args for one launch when PerLaunchArgs is set:
// the grid (and with it blocks and warps per SM and occupancy) varies with
// the launch, as dynamic shapes make it vary on real GPUs. It is a
// function of the correlation id so it draws nothing from the generator.
// Almost every launch gets a grid of its own (as in the independent trace
// of issue 16, where 90% of the argument sets were distinct).
func (m *model) launchArgs(k kernID, corr int64) string {
	s := m.kspec[k]
	h := uint64(corr) * 0x9E3779B97F4A7C15
	s.grid[0] = max(1, s.grid[0]+int64(h>>40)%max(s.grid[0], 1<<20))
	return kernelArgs(s.regs, s.smem, s.grid, s.block, m.numSms) + m.kextra[k]
}

func kernelArgs(regs, smem int64, grid, block [3]int64, numSms int64) string {
	blocks := grid[0] * grid[1] * grid[2]
	threads := block[0] * block[1] * block[2]
	bps := float64(blocks) / float64(numSms)
	wps := bps * float64((threads+31)/32)
	limit := min(64.0, float64(65536/(regs*32)))
	occ := int(min(wps, limit) / 64 * 100)
	return fmt.Sprintf(`"registers per thread": %d,      "shared memory": %d,      "blocks per SM": %f,      "warps per SM": %f,      "grid": [%d, %d, %d],      "block": [%d, %d, %d],      "est. achieved occupancy %%": %d`,
		regs, smem, bps, wps, grid[0], grid[1], grid[2], block[0], block[1], block[2], occ)
}

func newModel(g *gen) model {
	m := model{frags: []string{""}, numSms: 132, L: g.opt.Layers, D: g.opt.Devices}
	pick := func(v ...int64) int64 { return v[g.rand()%uint64(len(v))] }
	m.H = pick(768, 1024, 1536)
	m.B = pick(4, 8, 16)
	m.S = pick(512, 1024, 2048)
	m.V = pick(32000, 50304)
	m.F, m.NH, m.N = 4*m.H, m.H/64, m.B*m.S
	B, S, H, F, V, NH, N := m.B, m.S, m.H, m.F, m.V, m.NH, m.N
	params := 12*int64(max(m.L, 1))*H*H + V*H
	m.baseline = params * 16

	// Linear layers.
	dims := [5][2]int64{{H, 3 * H}, {H, H}, {H, F}, {F, H}, {H, V}}
	kern := [5]kernID{kGemmQKV, kGemmProj, kGemmFC1, kGemmFC2, kGemmHead}
	for i, d := range dims {
		in, out := d[0], d[1]
		l := linear{in: in, out: out, k: kern[i]}
		l.fwdNs = gemmNs(N, out, in)
		l.dgradNs = gemmNs(N, in, out)
		l.wgradNs = gemmNs(out, in, N)
		l.fLinear = m.add(shapes(bf(B, S, in), bf(out, in), bf(out)))
		l.fT = m.add(shapes(bf(out, in)))
		l.fTranspose = m.add(shapes(bf(out, in), sc("Scalar", "0"), sc("Scalar", "1")))
		l.fAsStrided = m.add(shapes(bf(out, in), sc("ScalarList", fmt.Sprintf("[%d, %d]", in, out)), sc("ScalarList", fmt.Sprintf("[1, %d]", in)), sc("", "")))
		l.fView = m.add(shapes(bf(B, S, in), sc("ScalarList", fmt.Sprintf("[%d, %d]", N, in))))
		l.fAddmm = m.add(shapes(bf(out), bf(N, in), bf(in, out), sc("Scalar", "1"), sc("Scalar", "1")))
		if i == linHead {
			l.fAddmm = m.add(shapes(bf(N, in), bf(in, out)))
		}
		l.fViewOut = m.add(shapes(bf(N, out), sc("ScalarList", fmt.Sprintf("[%d, %d, %d]", B, S, out))))
		l.fMmDgrad = m.add(shapes(bf(N, out), bf(out, in)))
		l.fMmWgrad = m.add(shapes(bf(out, N), bf(N, in)))
		l.fSum = m.add(shapes(bf(N, out), sc("ScalarList", "[0]"), sc("Scalar", "True"), sc("", "")))
		m.lin[i] = l
	}

	f := &m.frag
	f.embedding = m.add(shapes(bf(V, H), tns("long int", B, S), sc("Scalar", "-1"), sc("Scalar", "False"), sc("Scalar", "False")))
	f.indexSelect = m.add(shapes(bf(V, H), sc("Scalar", "0"), tns("long int", N)))
	f.embView = m.add(shapes(bf(N, H), sc("ScalarList", fmt.Sprintf("[%d, %d, %d]", B, S, H))))
	f.ln = m.add(shapes(bf(B, S, H), sc("ScalarList", fmt.Sprintf("[%d]", H)), bf(H), bf(H), sc("Scalar", "1e-05"), sc("Scalar", "True")))
	f.nativeLN = m.add(shapes(bf(B, S, H), sc("ScalarList", fmt.Sprintf("[%d]", H)), bf(H), bf(H), sc("Scalar", "1e-05")))
	f.lnBwd = m.add(shapes(bf(B, S, H), bf(B, S, H), sc("ScalarList", fmt.Sprintf("[%d]", H)), tns("float", B, S, 1), tns("float", B, S, 1), bf(H), bf(H), sc("ScalarList", "")))
	f.viewHeads = m.add(shapes(bf(B, S, H), sc("ScalarList", fmt.Sprintf("[%d, %d, %d, 64]", B, S, NH))))
	f.transposeHeads = m.add(shapes(bf(B, S, NH, 64), sc("Scalar", "1"), sc("Scalar", "2")))
	f.asStridedHeads = m.add(shapes(bf(B, S, NH, 64), sc("ScalarList", fmt.Sprintf("[%d, %d, %d, 64]", B, NH, S)), sc("ScalarList", fmt.Sprintf("[%d, 64, %d, 1]", S*3*H, 3*H)), sc("", "")))
	q := bf(B, NH, S, 64)
	f.sdpa = m.add(shapes(q, q, q, sc("", ""), sc("Scalar", "0."), sc("Scalar", "True"), sc("", ""), sc("Scalar", "False")))
	f.sdpaFlash = m.add(shapes(q, q, q, sc("Scalar", "0."), sc("Scalar", "True"), sc("Scalar", "False"), sc("", "")))
	f.flashFwd = m.add(shapes(bf(B, S, NH, 64), bf(B, S, NH, 64), bf(B, S, NH, 64), sc("", ""), sc("", ""), sc("Scalar", strconv.FormatInt(S, 10)), sc("Scalar", strconv.FormatInt(S, 10)), sc("Scalar", "0."), sc("Scalar", "True"), sc("Scalar", "False"), sc("", "")))
	f.emptyAct = m.add(shapes(sc("ScalarList", fmt.Sprintf("[%d, %d, %d, 64]", B, S, NH)), sc("Scalar", "15"), sc("Scalar", "0"), sc("Device", "cuda:0"), sc("Scalar", "False"), sc("", "")))
	f.emptyLse = m.add(shapes(sc("ScalarList", fmt.Sprintf("[%d, %d, %d]", B, NH, S)), sc("Scalar", "6"), sc("Scalar", "0"), sc("Device", "cuda:0"), sc("Scalar", "False"), sc("", "")))
	f.contiguous = m.add(shapes(bf(B, S, NH, 64), sc("Scalar", "0")))
	f.clone = m.add(shapes(bf(B, S, NH, 64), sc("Scalar", "0")))
	f.emptyLike = m.add(shapes(bf(B, S, NH, 64), sc("", ""), sc("", ""), sc("", ""), sc("", ""), sc("Scalar", "0")))
	f.emptyStrided = m.add(shapes(sc("ScalarList", fmt.Sprintf("[%d, %d, %d, 64]", B, S, NH)), sc("ScalarList", fmt.Sprintf("[%d, %d, 64, 1]", S*H, H)), sc("Scalar", "15"), sc("Scalar", "0"), sc("Device", "cuda:0"), sc("Scalar", "False")))
	f.copyAct = m.add(shapes(bf(B, S, NH, 64), bf(B, S, NH, 64), sc("Scalar", "False")))
	f.add = m.add(shapes(bf(B, S, H), bf(B, S, H), sc("Scalar", "1")))
	f.gelu = m.add(shapes(bf(B, S, F), sc("String", "none")))
	f.geluBwd = m.add(shapes(bf(B, S, F), bf(B, S, F), sc("String", "none")))
	f.dropout = m.add(shapes(bf(B, S, H), sc("Scalar", "0.1"), sc("Scalar", "True")))
	f.nDropout = m.add(shapes(bf(B, S, H), sc("Scalar", "0.1"), sc("Scalar", "True")))
	f.dropoutBwd = m.add(shapes(bf(B, S, H), tns("bool", B, S, H), sc("Scalar", "1.1111111111111112")))
	f.flashBwd = m.add(shapes(q, q, q, q, q, tns("float", B, NH, S), sc("Scalar", strconv.FormatInt(S, 10)), sc("Scalar", strconv.FormatInt(S, 10)), sc("Scalar", "0."), sc("Scalar", "True"), tns("long int"), tns("long int"), sc("", "")))
	f.flashBwd2 = m.add(shapes(bf(B, S, NH, 64), bf(B, S, NH, 64), bf(B, S, NH, 64), bf(B, S, NH, 64), bf(B, S, NH, 64), tns("float", B, NH, S), sc("", ""), sc("", ""), sc("Scalar", strconv.FormatInt(S, 10)), sc("Scalar", strconv.FormatInt(S, 10)), sc("Scalar", "0."), sc("Scalar", "True")))
	f.logSoftmax = m.add(shapes(bf(N, V), sc("Scalar", "1"), sc("", "")))
	f.logSoftmaxBwd = m.add(shapes(bf(N, V), bf(N, V), sc("Scalar", "1"), sc("Scalar", "15")))
	f.crossEntropy = m.add(shapes(bf(N, V), tns("long int", N), sc("", ""), sc("Scalar", "1"), sc("Scalar", "-100"), sc("Scalar", "0.")))
	f.nllNd = m.add(shapes(bf(N, V), tns("long int", N), sc("", ""), sc("Scalar", "1"), sc("Scalar", "-100")))
	f.nll = f.nllNd
	f.nllFwd = m.add(shapes(bf(N, V), tns("long int", N), sc("", ""), sc("Scalar", "1"), sc("Scalar", "-100")))
	f.nllBwd = m.add(shapes(bf(), bf(N, V), tns("long int", N), sc("", ""), sc("Scalar", "1"), sc("Scalar", "-100"), bf()))
	f.headMatmul = m.add(shapes(bf(B, S, H), bf(H, V)))
	f.unsafe = m.add(shapes(bf(N, V), sc("ScalarList", fmt.Sprintf("[%d, %d, %d]", B, S, V))))
	f.stack = m.add(shapes(sc("TensorList", ""), sc("Scalar", "0")))
	f.catCPU = m.add(shapes(sc("TensorList", ""), sc("Scalar", "0")))
	f.to = m.add(shapes(tns("long int", B, S), sc("", ""), sc("Scalar", "4"), sc("Device", "cuda:0"), sc("", ""), sc("Scalar", "True"), sc("Scalar", "False"), sc("", "")))
	f.toCopy = m.add(shapes(tns("long int", B, S), sc("Scalar", "4"), sc("", ""), sc("Device", "cuda:0"), sc("", ""), sc("Scalar", "True"), sc("", "")))
	f.emptyIn = m.add(shapes(sc("ScalarList", fmt.Sprintf("[%d, %d]", B, S)), sc("ScalarList", fmt.Sprintf("[%d, 1]", S)), sc("Scalar", "4"), sc("Scalar", "0"), sc("Device", "cuda:0"), sc("Scalar", "False")))
	f.copyIn = m.add(shapes(tns("long int", B, S), tns("long int", B, S), sc("Scalar", "True")))
	f.toDev = m.add(shapes(bf(B, S, H), sc("", ""), sc("Scalar", "15"), sc("Device", "cuda:1"), sc("", ""), sc("Scalar", "False"), sc("Scalar", "False"), sc("", "")))
	f.toCopyDev = m.add(shapes(bf(B, S, H), sc("Scalar", "15"), sc("", ""), sc("Device", "cuda:1"), sc("", ""), sc("Scalar", "False"), sc("", "")))
	f.emptyDev = m.add(shapes(sc("ScalarList", fmt.Sprintf("[%d, %d, %d]", B, S, H)), sc("ScalarList", fmt.Sprintf("[%d, %d, 1]", S*H, H)), sc("Scalar", "15"), sc("Scalar", "0"), sc("Device", "cuda:1"), sc("Scalar", "False")))
	f.copyDev = m.add(shapes(bf(B, S, H), bf(B, S, H), sc("Scalar", "False")))
	f.zero = m.add(shapes(bf(V, H)))
	f.fill = m.add(shapes(bf(V, H), sc("Scalar", "0")))
	f.adamw = m.add(shapes(sc("TensorList", ""), sc("TensorList", ""), sc("TensorList", ""), sc("TensorList", ""), sc("TensorList", ""), sc("TensorList", ""), sc("Scalar", "0.0003"), sc("Scalar", "0.9"), sc("Scalar", "0.95"), sc("Scalar", "0.1"), sc("Scalar", "1e-08"), sc("Scalar", "False"), sc("Scalar", "False"), sc("", ""), sc("", "")))
	f.item = m.add(shapes(tns("float")))
	bucket := 4 * 12 * H * H
	ranks := make([]string, g.opt.WorldSize)
	for i := range ranks {
		ranks[i] = strconv.Itoa(i)
	}
	rankList := "[" + strings.Join(ranks, ", ") + "]"
	f.comms = m.add(fmt.Sprintf(`"Process Group Name": "0", "Global rank stride": 1, "Out msg nelems": %d, "Process Group Ranks": "%s", "Group size": %d, "Global rank start": 0, "In msg nelems": %d, "In split size": "[]", "Out split size": "[]", "dtype": "BFloat16", "Process Group Description": "default_pg", "Collective name": "allreduce"`,
		bucket, rankList, g.opt.WorldSize, bucket))
	f.addGrad = m.add(shapes(bf(H, H), bf(H, H), sc("Scalar", "1")))
	f.embBwd = m.add(shapes(bf(B, S, H), tns("long int", B, S), sc("Scalar", strconv.FormatInt(V, 10)), sc("Scalar", "-1"), sc("Scalar", "False"), sc("Scalar", "False")))
	f.embDense = m.add(shapes(bf(B, S, H), tns("long int", B, S), sc("Scalar", strconv.FormatInt(V, 10)), sc("Scalar", "-1"), sc("Scalar", "False")))
	f.mulMask = m.add(shapes(bf(B, S, H), tns("bool", B, S, H)))

	// Kernels: geometry and typical duration.
	ew := func(elems int64) [3]int64 { return [3]int64{(elems + 511) / 512, 1, 1} }
	b128 := [3]int64{128, 1, 1}
	gemmGrid := [3]int64{m.numSms, 1, 1}
	act := N * H
	specs := [numKerns]kernelSpec{
		kGemmQKV:           {168, 231424, gemmGrid, [3]int64{384, 1, 1}, m.lin[linQKV].fwdNs},
		kGemmProj:          {168, 231424, gemmGrid, [3]int64{384, 1, 1}, m.lin[linProj].fwdNs},
		kGemmFC1:           {168, 213504, gemmGrid, [3]int64{384, 1, 1}, m.lin[linFC1].fwdNs},
		kGemmFC2:           {128, 49152, [3]int64{H / 32, N / 128, 1}, [3]int64{128, 1, 1}, m.lin[linFC2].fwdNs},
		kGemmHead:          {168, 231424, gemmGrid, [3]int64{384, 1, 1}, m.lin[linHead].fwdNs},
		kGemmDgrad:         {168, 231424, gemmGrid, [3]int64{384, 1, 1}, m.lin[linProj].dgradNs},
		kGemmWgrad:         {168, 231424, gemmGrid, [3]int64{384, 1, 1}, m.lin[linProj].wgradNs},
		kLayerNorm:         {28, 0, [3]int64{N, 1, 1}, [3]int64{min(H/8, 1024), 1, 1}, memNs(act * 4)},
		kLayerNormBwdInput: {32, 0, [3]int64{N, 1, 1}, [3]int64{min(H/8, 1024), 1, 1}, memNs(act * 6)},
		kLayerNormBwdGamma: {40, 8448, [3]int64{H / 32, 1, 1}, [3]int64{32, 32, 1}, memNs(act * 4)},
		kFlashFwd:          {255, 49152, [3]int64{S / 128, B * NH, 1}, b128, gemmNs(B*NH*S, S, 128) / 2},
		kFlashBwdDotDoO:    {32, 0, [3]int64{S / 128, B, NH}, [3]int64{256, 1, 1}, memNs(act * 4)},
		kFlashBwd:          {255, 98304, [3]int64{S / 128, B, NH}, [3]int64{256, 1, 1}, gemmNs(B*NH*S, S, 320) / 2},
		kFlashBwdConvertDq: {32, 16384, [3]int64{S / 128, B, NH}, [3]int64{256, 1, 1}, memNs(act * 6)},
		kCopy:              {32, 0, ew(act), b128, memNs(act * 4)},
		kAdd:               {24, 0, ew(act), b128, memNs(act * 6)},
		kAddInplace:        {20, 0, ew(H * H), b128, memNs(H * H * 12)},
		kGelu:              {24, 0, ew(N * F), b128, memNs(N * F * 4)},
		kGeluBwd:           {32, 0, ew(N * F), b128, memNs(N * F * 6)},
		kDropout:           {32, 0, ew(act), [3]int64{256, 1, 1}, memNs(act * 5)},
		kDropoutBwd:        {18, 0, ew(act), b128, memNs(act * 5)},
		kReduceSum:         {32, 16, [3]int64{max(H/16, 1), 1, 1}, [3]int64{32, 16, 1}, memNs(act * 2)},
		kSoftmax:           {38, 0, [3]int64{N, 1, 1}, [3]int64{1024, 1, 1}, memNs(N * V * 4)},
		kSoftmaxBwd:        {40, 0, [3]int64{N, 1, 1}, [3]int64{1024, 1, 1}, memNs(N * V * 6)},
		kNllFwd:            {32, 0, [3]int64{1, 1, 1}, [3]int64{512, 1, 1}, memNs(N * 64)},
		kNllBwd:            {32, 0, [3]int64{1, 1, 1}, [3]int64{512, 1, 1}, memNs(N * 64)},
		kFill:              {16, 0, ew(V * H), b128, memNs(V * H * 2)},
		kIndexSelect:       {40, 0, [3]int64{min(N*H/4096, 65535), 1, 1}, [3]int64{128, 1, 1}, memNs(act * 4)},
		kEmbeddingBwd:      {48, 4096, [3]int64{(H + 31) / 32, 1, 1}, [3]int64{32, 32, 1}, memNs(act*4) * 3},
		kAdamW:             {96, 0, [3]int64{320, 1, 1}, [3]int64{512, 1, 1}, memNs(12 * H * H * 16)},
		kNcclAllReduce:     {96, 87568, [3]int64{8, 1, 1}, [3]int64{544, 1, 1}, memNs(bucket*2) * 6},
	}
	m.kspec = specs
	for k, s := range specs {
		m.kargs[k] = kernelArgs(s.regs, s.smem, s.grid, s.block, m.numSms)
		m.kdur[k] = s.ns
	}
	m.kextra[kNcclAllReduce] = fmt.Sprintf(`, "Collective name": "allreduce", "In msg nelems": %d, "Out msg nelems": %d, "Group size": %d, "dtype": "BFloat16", "In split size": "[]", "Out split size": "[]", "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "%s"`,
		bucket, bucket, g.opt.WorldSize, rankList)
	m.kargs[kNcclAllReduce] += m.kextra[kNcclAllReduce]
	if len(m.frags) > 65535 {
		panic("tracegen: too many fragments")
	}
	return m
}
