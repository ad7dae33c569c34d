// Package tracegen writes realistic synthetic PyTorch profiler traces
// (Kineto / Chrome trace JSON) of any size, deterministically from a seed,
// for tests and benchmarks of the trace reader.
//
// Design note. The output must reach 10 GB while the generator holds only
// a few megabytes, and it must be produced faster than any reader can
// consume it (hundreds of MB/s). So:
//
//   - The simulated program is a training loop of a GPT-like model
//     (embedding, N transformer blocks, LM head, cross-entropy, AdamW, DDP
//     all-reduce, optional gradient accumulation and a second GPU). It is
//     run, not described: a time cursor per CPU thread and a "busy until"
//     per GPU stream advance as ops open and close, so every child lies
//     inside its parent, every kernel starts after its launch call began and
//     after the previous kernel on its stream, and steps follow each other.
//   - Events are recorded as small fixed-size records (rec) in pre-order and
//     written out in batches as soon as they are closed; records still open
//     (a ProfilerStep, an nn.Module frame) stay behind and are written when
//     they close, which gives the same mixed order real Kineto files have.
//   - Text is built with append/strconv into one reused buffer; everything
//     constant (names, per-op "Input Dims" fragments, kernel launch
//     geometry) is rendered once. A second goroutine does the writing (and
//     gzip), so generation and compression overlap.
//   - Size is steered, not truncated: a few tiny dry runs measure what one
//     layer, one micro-batch and one step cost in bytes, and the plan picks
//     layers, micro-batches and steps to land near the target.
//
// The format follows what Kineto writes (see GUIDE §2 and the real traces
// in testdata/traces): top-level metadata first, "traceEvents", then
// traceName / displayTimeUnit / baseTimeNanoseconds last; ts/dur in µs with
// exactly three decimals, relative to baseTimeNanoseconds.
package tracegen

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// Options selects what to generate. The zero value is valid (16 MB, seed 0).
type Options struct {
	// TargetBytes is the approximate size of the uncompressed JSON
	// (default 16 MB). The result lands within a few percent of it, but
	// never below the smallest trace the other options allow.
	TargetBytes int64
	// Seed makes the output deterministic: the same options give the
	// same bytes.
	Seed int64
	// Steps is the number of ProfilerStep#N ranges (0: one per ~64 MB,
	// at least 2).
	Steps int
	// Devices is the number of GPUs, 1 or 2 (default 1). With 2, the
	// model's blocks are split across them (pipeline style) and
	// activations cross by peer-to-peer copies.
	Devices int
	// WorldSize is the DDP world size recorded in distributedInfo (default
	// 2). Above 1 the last micro-batch of each step all-reduces gradients
	// (NCCL kernels on a second stream); 1 turns communication off.
	WorldSize int
	// Layers and MicroBatches fix the model depth and the gradient
	// accumulation factor; when both are set TargetBytes is ignored.
	Layers       int
	MicroBatches int
	// Gzip compresses the output with gzip at GzipLevel (default
	// gzip.DefaultCompression).
	Gzip      bool
	GzipLevel int
	// PerLaunchArgs gives every kernel launch its own grid, blocks and
	// warps per SM and occupancy, as on real GPUs with dynamic shapes
	// (default: one set of values per kernel).
	PerLaunchArgs bool
	// DistinctNames gives every CPU op a name of its own (its External id
	// appended), the shape of traces with generated op names.
	DistinctNames bool
	// TinyEvents puts tinyFrames small Python frames (one line, the ids
	// only) before every leaf op of the main thread, as with_stack does
	// on Python-heavy code: most events are those, ~140 bytes each.
	TinyEvents bool
	// Layout is the JSON layout (default Kineto's; see Layout).
	Layout Layout
	// OpsPerStep, when set, makes every step a short loop instead of the
	// model's training step: a DataLoader fetch, OpsPerStep aten::add ops
	// of one kernel each and a loss.item() sync. A few KB a step, so that
	// thousands of steps fit a small trace (the shape of real traces with
	// one step per 100 KB or less); TargetBytes, Layers and MicroBatches
	// are then ignored.
	OpsPerStep int
}

// tinyFrames is how many Python frames TinyEvents adds per leaf op.
const tinyFrames = 128

// Stats is the ground truth of one generated trace: exactly what was
// written, for readers' tests to compare against.
type Stats struct {
	Bytes           int64            // uncompressed JSON bytes
	CompressedBytes int64            // bytes written to w when Gzip, else = Bytes
	Events          int64            // entries of traceEvents
	ByCategory      map[string]int64 // entries per "cat"; "" = no cat (M events, global instants)
	ByPhase         map[string]int64 // entries per "ph"

	Kernels         int64 // cat kernel
	Memcpys         int64 // cat gpu_memcpy
	Memsets         int64 // cat gpu_memset
	RuntimeCalls    int64 // cat cuda_runtime
	CPUOps          int64 // cat cpu_op
	UserAnnotations int64 // cat user_annotation
	PythonFunctions int64 // cat python_function
	MemoryEvents    int64 // [memory] instants
	FlowPairs       int64 // ac2g s/f pairs (= GPU events)
	FwdBwdPairs     int64 // fwdbwd s/f pairs
	KernelNs        int64 // sum of kernel durations, all devices

	Steps        []Step // ProfilerStep ranges, in order
	Layers       int
	MicroBatches int
	Devices      int
	WorldSize    int

	BaseTimeNs   int64 // baseTimeNanoseconds
	TraceStartNs int64 // the Trace span, relative to BaseTimeNs
	TraceEndNs   int64
}

// Step is one ProfilerStep#N as generated: its CPU range (relative to
// Stats.BaseTimeNs) and the GPU work launched inside it.
type Step struct {
	Num            int
	StartNs, EndNs int64
	Kernels        int64 // kernels launched inside the step
	GPUEvents      int64 // kernels + memcpys + memsets launched inside it
}

// Name is the annotation's name, "ProfilerStep#N".
func (s Step) Name() string { return "ProfilerStep#" + strconv.Itoa(s.Num) }

// Generate writes one trace to w and returns its ground truth.
func Generate(w io.Writer, opt Options) (Stats, error) {
	opt, err := normalize(opt)
	if err != nil {
		return Stats{}, err
	}
	if opt.Layers == 0 || opt.MicroBatches == 0 {
		opt = plan(opt)
	}
	cw := &countWriter{w: w}
	var dst io.Writer = cw
	var zw *gzip.Writer
	if opt.Gzip {
		zw, err = gzip.NewWriterLevel(cw, opt.GzipLevel)
		if err != nil {
			return Stats{}, err
		}
		dst = zw
	}
	g := newGen(opt, dst)
	g.run()
	err = g.finish()
	if zw != nil {
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
	}
	st := g.stats()
	st.CompressedBytes = cw.n
	return st, err
}

// Check reports whether Generate would accept the options.
func (o Options) Check() error {
	_, err := normalize(o)
	return err
}

func normalize(opt Options) (Options, error) {
	if opt.TargetBytes < 0 || opt.Steps < 0 || opt.Layers < 0 || opt.MicroBatches < 0 || opt.OpsPerStep < 0 {
		return opt, errors.New("tracegen: negative size option")
	}
	if opt.TargetBytes == 0 {
		opt.TargetBytes = 16 << 20
	}
	if opt.Devices == 0 {
		opt.Devices = 1
	}
	if opt.Devices < 1 || opt.Devices > 2 {
		return opt, fmt.Errorf("tracegen: Devices must be 1 or 2, got %d", opt.Devices)
	}
	if opt.WorldSize == 0 {
		opt.WorldSize = 2
	}
	if opt.WorldSize < 1 {
		return opt, fmt.Errorf("tracegen: WorldSize must be >= 1, got %d", opt.WorldSize)
	}
	switch opt.Layout {
	case LayoutDefault, LayoutCompact, LayoutIndent:
	default:
		return opt, fmt.Errorf("tracegen: unknown Layout %q (want %q or %q)", opt.Layout, LayoutCompact, LayoutIndent)
	}
	if opt.GzipLevel == 0 {
		opt.GzipLevel = gzip.DefaultCompression
	}
	if opt.GzipLevel < gzip.HuffmanOnly || opt.GzipLevel > gzip.BestCompression {
		return opt, fmt.Errorf("tracegen: bad GzipLevel %d", opt.GzipLevel)
	}
	if opt.Steps == 0 {
		s := (opt.TargetBytes + 32<<20) / (64 << 20)
		opt.Steps = int(max(2, min(s, 100000)))
	}
	if opt.Layers > 0 && opt.Layers < opt.Devices {
		opt.Layers = opt.Devices
	}
	if opt.OpsPerStep > 0 { // no model to size: the header's figures only
		opt.Layers, opt.MicroBatches = max(opt.Layers, opt.Devices), max(opt.MicroBatches, 1)
	}
	return opt, nil
}

// plan picks Layers and MicroBatches so that the trace lands near
// TargetBytes. Bytes per step are modelled as
//
//	base + M*(mb + L*u) + L*o
//
// (u: one block forward+backward, o: a block's share of the optimizer and
// of zero_grad, mb: per-micro-batch overhead) and fitted from four one-step
// dry runs; a two-step run separates the header and trailer.
func plan(opt Options) Options {
	fixedL, fixedM := opt.Layers, opt.MicroBatches
	dry := func(l, m, steps int) float64 {
		o := opt
		o.Layers, o.MicroBatches, o.Steps, o.Gzip = l, m, steps, false
		g := newGen(o, nil)
		// Ids grow through a trace and longer numbers mean more bytes:
		// start the counters where they are half-way through the real one.
		mid := opt.TargetBytes / 330 / 2
		g.evIdx += mid * 60 / 100
		g.extID += mid * 33 / 100
		g.corrID += mid * 8 / 100
		g.pyID += mid * 13 / 100
		g.seqNum += mid * 6 / 100
		g.run()
		_ = g.finish()
		return float64(g.bytes)
	}
	d := opt.Devices
	s11, s21 := dry(d, 1, 1), dry(2*d, 1, 1)
	s12, s22 := dry(d, 2, 1), dry(2*d, 2, 1)
	two := dry(d, 1, 2)
	fd := float64(d)
	u := ((s22 - s12) - (s21 - s11)) / fd
	o := (s21-s11)/fd - u
	mb := (s12 - s11) - fd*u
	step11 := two - s11
	header := s11 - step11
	base := step11 - mb - fd*(u+o)
	if u <= 0 {
		u = 1
	}

	budget := (float64(opt.TargetBytes) - header) / float64(opt.Steps)
	L := fixedL
	if L == 0 {
		L = maxLayers
		if fixedM > 0 {
			L = int((budget - base - float64(fixedM)*mb) / (float64(fixedM)*u + o))
		} else if c := base + mb + float64(L)*(u+o); c > budget {
			L = int((budget - base - mb) / (u + o))
		}
		L = max(d, min(L, maxLayers*4))
		L -= L % d
	}
	M := fixedM
	if M == 0 {
		M = int((budget-base-float64(L)*o)/(mb+float64(L)*u) + 0.999)
		M = max(1, M)
		if fixedL == 0 && M > 1 {
			// Rounding M up overshoots; take the layers back.
			fm := float64(M)
			x := (budget - base - fm*mb) / (fm*u + o) / fd
			L = d * int(x+0.5)
			L = max(d, min(L, maxLayers*4))
		}
	}
	opt.Layers, opt.MicroBatches = L, M
	return opt
}

// maxLayers caps the model depth chosen by plan; larger traces get more
// micro-batches (gradient accumulation) instead of deeper models.
const maxLayers = 32

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// asyncWriter writes filled buffers on its own goroutine so that
// formatting, compression and I/O overlap.
type asyncWriter struct {
	ch   chan []byte
	free chan []byte
	done chan struct{}
	mu   sync.Mutex
	err  error
}

const (
	bufFlush = 1 << 20
	bufCap   = bufFlush + 64<<10
	nBufs    = 3
)

func newAsyncWriter(w io.Writer) *asyncWriter {
	a := &asyncWriter{
		ch:   make(chan []byte, nBufs),
		free: make(chan []byte, nBufs),
		done: make(chan struct{}),
	}
	for range nBufs - 1 {
		a.free <- make([]byte, 0, bufCap)
	}
	go func() {
		defer close(a.done)
		for b := range a.ch {
			if a.failed() == nil {
				if _, err := w.Write(b); err != nil {
					a.mu.Lock()
					a.err = err
					a.mu.Unlock()
				}
			}
			a.free <- b[:0]
		}
	}()
	return a
}

func (a *asyncWriter) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}
