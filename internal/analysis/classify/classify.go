// Package classify recognises events by name: communication ops and
// kernels, tensor-core kernels, runtime call classes (launch, sync,
// memcpy), DataLoader annotations and memcpy directions. Every analysis
// uses it so that "communication" or "a sync" means the same thing
// everywhere.
//
// Design note: the string predicates here are cheap but not free, so
// analyses never call them per event. For(t) classifies each distinct
// event name of a trace once and returns a Table indexed by StrID, shared
// by every analysis of that trace; an analysis then reads one slice
// element per event. The kernel table (internal/analysis/kernels) is a
// few dozen regular expressions, tens of µs per name: it is consulted
// only for names that some device event or host call carries, never for
// names only host ops carry (a trace can hold a million distinct op names).
package classify

import (
	"runtime"
	"strings"
	"sync"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/kernels"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Flag is a set of name classes.
type Flag uint32

const (
	// CommOp: a host-side communication op or annotation: nccl:*, gloo:*,
	// record_param_comms, c10d::* (allreduce_, allgather_, ...),
	// _c10d_functional::* and c10d_functional::* collectives.
	CommOp Flag = 1 << iota
	// CommKernel: a device-side communication kernel (see IsCommKernel).
	CommKernel
	// TBComm: one of the ten names the TensorBoard plugin counts as
	// communication (nccl:/gloo: broadcast, reduce, all_reduce,
	// all_gather, reduce_scatter).
	TBComm
	// TensorCore: a kernel that runs on tensor (or AMD matrix) cores by the
	// kernel-semantics table (internal/analysis/kernels, rendered in
	// docs/kernels.md). Kernels whose math unit the table does not know
	// (unknown kernels, generic "gemm" names) count as not using tensor
	// cores, so the share is a lower bound.
	TensorCore
	// TBTensorCore: a kernel on the TensorBoard plugin's tensor-core
	// allow-list (see TBUsesTensorCores).
	TBTensorCore
	// Launch: a runtime/driver call that launches a kernel or a graph.
	Launch
	// Sync: a runtime/driver call that blocks the host until device work
	// finishes (stream/device/event/context synchronize).
	Sync
	// StreamWait: cudaStreamWaitEvent and the like: makes a stream wait on
	// an event; does not block the host.
	StreamWait
	// MemcpyAsync: an asynchronous memcpy call (cudaMemcpyAsync, ...).
	MemcpyAsync
	// MemcpyBlocking: a synchronous memcpy call (cudaMemcpy, cuMemcpyDtoH,
	// hipMemcpy, ...): it returns when the copy is done.
	MemcpyBlocking
	// MemsetCall: a memset runtime call.
	MemsetCall
	// DataLoader: a DataLoader __next__ annotation.
	DataLoader
	// TBDataLoader: what the TensorBoard plugin counts as DataLoader
	// (DataLoader __next__ plus any enumerate(DataPipe)#...).
	TBDataLoader
	// Backward: an autograd backward op (see IsBackward).
	Backward
	// LayerForward: the op a layer's forward enters by
	// (layerForwardOps).
	LayerForward
	// OptimizerStep: torch.optim's record_function around a step,
	// Optimizer.step#<class>.step.
	OptimizerStep
	// Softmax, ScoreProduct, ScoreNonlinear and ScorePass sort the ops
	// around attention's softmax by what they do to its scores
	// (scoreOps; optable.ScoreSources): aten::softmax; a matmul that
	// makes them (q @ k.transpose); an elementwise nonlinearity that
	// makes them (LeakyReLU, tanh: graph or additive attention); a view,
	// scaling or masking they pass through.
	Softmax
	ScoreProduct
	ScoreNonlinear
	ScorePass
)

// Comm is CommOp | CommKernel.
const Comm = CommOp | CommKernel

// Table holds the flags of every event name of one trace.
type Table struct {
	flags []Flag
}

// For returns the classes of the names of t's events, computed once per
// trace. CommKernel, TensorCore and TBTensorCore are set only on names
// that some device event (trace.Kind.OnDevice) carries: matching a name
// against the kernel rules is the costly part, and runtime calls,
// instants and counters are never kernels.
func For(t *trace.Trace) *Table {
	return t.Derived(tableKey{}, func() any { return newTable(t) }).(*Table)
}

type tableKey struct{}

func newTable(t *trace.Trace) *Table {
	const used, device = 1, 2
	seen := make([]uint8, t.NumStrings())
	for i, id := range t.Events.Name {
		if t.Events.Kind[i].OnDevice() {
			seen[id] |= used | device
		} else {
			seen[id] |= used
		}
	}
	tb := &Table{flags: make([]Flag, t.NumStrings())}
	// On every core: a trace can hold a million distinct op names (~40 ms
	// of CPU), and the window check waits for the table.
	var wg sync.WaitGroup
	per := len(seen)/runtime.GOMAXPROCS(0) + 1
	for lo := 0; lo < len(seen); lo += per {
		wg.Go(func() {
			for id := lo; id < min(lo+per, len(seen)); id++ {
				if seen[id] != 0 {
					tb.flags[id] = of(t.Str(trace.StrID(id)), seen[id]&device != 0)
				}
			}
		})
	}
	wg.Wait()
	return tb
}

// Flags returns the classes of name id.
func (tb *Table) Flags(id trace.StrID) Flag {
	if int(id) < len(tb.flags) {
		return tb.flags[id]
	}
	return 0
}

// Has reports whether name id has any of the classes in f.
func (tb *Table) Has(id trace.StrID, f Flag) bool { return tb.Flags(id)&f != 0 }

// of computes the classes of name, the kernel classes (CommKernel,
// TensorCore, TBTensorCore) only when kernel is set.
func of(name string, kernel bool) Flag {
	var f Flag
	if IsCommOp(name) {
		f |= CommOp
	}
	if kernel {
		k := kernels.Classify(name) // once: the table is a few dozen regexps
		if k.Family == kernels.Communication {
			f |= CommKernel
		}
		if k.Unit == kernels.TensorCore {
			f |= TensorCore
		}
		if TBUsesTensorCores(name) {
			f |= TBTensorCore
		}
	}
	if IsTBCommunication(name) {
		f |= TBComm
	}
	switch RuntimeClassOf(name) {
	case RuntimeLaunch:
		f |= Launch
	case RuntimeSync:
		f |= Sync
	case RuntimeStreamWait:
		f |= StreamWait
	case RuntimeMemcpyAsync:
		f |= MemcpyAsync
	case RuntimeMemcpyBlocking:
		f |= MemcpyBlocking
	case RuntimeMemset:
		f |= MemsetCall
	}
	if IsDataLoader(name) {
		f |= DataLoader
	}
	if IsTBDataLoader(name) {
		f |= TBDataLoader
	}
	if IsBackward(name) {
		f |= Backward
	}
	if layerForwardOps[name] {
		f |= LayerForward
	}
	if strings.HasPrefix(name, "Optimizer.step#") {
		f |= OptimizerStep
	}
	f |= scoreOps[strings.TrimSuffix(name, "_")] // in place (tanh_, masked_fill_) as not
	return f
}

// layerForwardOps are the ops the forward of a layer (nn.Linear, the
// convolutions, the norms, nn.Embedding, attention, dropout, the RNNs)
// calls first. They are composite: autograd's backward formulas call the
// ops beneath them (mm, native_layer_norm_backward, ...), never these, so
// one of them inside a backward op is a forward run again there, as
// activation checkpointing does.
var layerForwardOps = map[string]bool{
	"aten::linear": true, "aten::bilinear": true,
	"aten::conv1d": true, "aten::conv2d": true, "aten::conv3d": true,
	"aten::conv_transpose1d": true, "aten::conv_transpose2d": true, "aten::conv_transpose3d": true,
	"aten::layer_norm": true, "aten::group_norm": true, "aten::batch_norm": true, "aten::instance_norm": true, "aten::rms_norm": true,
	"aten::embedding": true, "aten::embedding_bag": true,
	"aten::scaled_dot_product_attention": true, "aten::dropout": true,
	"aten::lstm": true, "aten::gru": true, "aten::rnn_tanh": true, "aten::rnn_relu": true,
}

// scoreOps: the classes of the ops around attention's softmax (Softmax).
var scoreOps = func() map[string]Flag {
	m := map[string]Flag{"aten::softmax": Softmax}
	for _, n := range []string{"aten::matmul", "aten::bmm", "aten::baddbmm", "aten::mm", "aten::einsum"} {
		m[n] = ScoreProduct
	}
	for _, n := range []string{"aten::leaky_relu", "aten::tanh", "aten::relu", "aten::elu", "aten::gelu", "aten::sigmoid", "aten::silu"} {
		m[n] = ScoreNonlinear
	}
	for _, n := range []string{"aten::view", "aten::reshape", "aten::_reshape_alias", "aten::_unsafe_view", "aten::alias", "aten::as_strided",
		"aten::view_as", "aten::reshape_as", "aten::expand_as", "aten::type_as", "aten::flatten", "aten::unflatten", "aten::narrow",
		"aten::split", "aten::chunk", "aten::unbind", "aten::transpose", "aten::t", "aten::permute", "aten::reciprocal", "aten::pow",
		"aten::contiguous", "aten::expand", "aten::unsqueeze", "aten::squeeze", "aten::div", "aten::mul", "aten::add", "aten::sub",
		"aten::rsub", "aten::neg", "aten::sqrt", "aten::masked_fill", "aten::where", "aten::to", "aten::_to_copy", "aten::copy",
		"aten::clone", "aten::detach", "aten::ones_like", "aten::zeros_like", "aten::full_like", "aten::empty_like", "aten::fill",
		"aten::gt", "aten::lt", "aten::ge", "aten::le", "aten::eq", "aten::ne", "aten::logical_not", "aten::scalar_tensor",
		"aten::lift_fresh", "aten::select", "aten::slice", "aten::index", "aten::tril", "aten::triu", "aten::dropout",
		"aten::feature_dropout", "aten::native_dropout"} {
		m[n] = ScorePass
	}
	return m
}()

var commOpPrefixes = []string{
	"nccl:", "gloo:", "mpi:", "ucc:", "xccl:", "rccl:",
	"record_param_comms",
	"c10d::", "_c10d_functional::", "c10d_functional::", "_c10d_functional_autograd::",
	"ProcessGroupNCCL::", "ProcessGroupGloo::",
}

// IsCommOp reports whether a host op or annotation is a collective or
// point-to-point communication: names starting with nccl:, gloo:, mpi:,
// ucc:, xccl:, rccl:, record_param_comms, c10d::, _c10d_functional::,
// c10d_functional::, _c10d_functional_autograd::, ProcessGroupNCCL::,
// ProcessGroupGloo::.
func IsCommOp(name string) bool {
	for _, p := range commOpPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// IsCommKernel reports whether a kernel is a communication kernel by the
// kernel-semantics table (internal/analysis/kernels): NCCL/RCCL/MSCCL,
// DeepEP, NVSHMEM/rocSHMEM, symmetric memory (multimem, one/two-shot
// all-reduce) and gloo kernels. Host op names ("nccl:all_reduce") are not
// kernels and are never matched.
func IsCommKernel(name string) bool { return kernels.Classify(name).Family == kernels.Communication }

var tbComm = []string{
	"nccl:broadcast", "nccl:reduce", "nccl:all_reduce", "nccl:all_gather", "nccl:reduce_scatter",
	"gloo:broadcast", "gloo:reduce", "gloo:all_reduce", "gloo:all_gather", "gloo:reduce_scatter",
}

// IsTBCommunication reports whether the TensorBoard plugin (0.4.x) counts
// an op as communication: exactly one of ten hard-coded names.
func IsTBCommunication(name string) bool {
	for _, s := range tbComm {
		if name == s {
			return true
		}
	}
	return false
}

// tbTensorCore is the TensorBoard plugin's allow-list (from NVIDIA PyProf).
var tbTensorCore = []string{
	"h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816",
	"dgrad_1x1_stride_2x2", "first_layer_wgrad_kernel", "conv1x1",
	"conv2d_c1_k1", "direct_group", "xmma_implicit_gemm",
	"xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm",
	"xmma_gemm", "xmma_sparse_gemm", "c1688",
}

// TBUsesTensorCores is the TensorBoard plugin's test: the kernel name
// contains one of its 18 allow-listed substrings.
func TBUsesTensorCores(name string) bool { return ContainsAny(name, tbTensorCore) }

// IsBackward reports whether an op name is autograd's: the engine's
// evaluate_function or a backward node (AddmmBackward0; without the
// digit before torch 1.10).
func IsBackward(name string) bool {
	return strings.HasPrefix(name, "autograd::engine::evaluate_function") ||
		strings.HasSuffix(strings.TrimRight(name, "0123456789"), "Backward")
}

// ContainsAny reports whether name contains any of the substrings.
func ContainsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// RuntimeClass is what a runtime or driver call does.
type RuntimeClass uint8

const (
	RuntimeOther          RuntimeClass = iota
	RuntimeLaunch                      // launches a kernel or a graph
	RuntimeSync                        // blocks the host until device work is done
	RuntimeStreamWait                  // stream waits on event; host not blocked
	RuntimeMemcpyAsync                 // asynchronous copy
	RuntimeMemcpyBlocking              // synchronous copy
	RuntimeMemset                      // memset
)

var runtimeClassNames = [...]string{"other", "launch", "sync", "stream_wait", "memcpy_async", "memcpy_blocking", "memset"}

func (c RuntimeClass) String() string {
	if int(c) < len(runtimeClassNames) {
		return runtimeClassNames[c]
	}
	return "invalid"
}

// RuntimeClassOf classifies a runtime (cuda_runtime, hip*) or driver call.
//
// Launch: cudaLaunch* (cudaLaunchKernel, cudaLaunchKernelExC,
// cudaLaunchCooperativeKernel, old cudaLaunch), cuLaunch* (cuLaunchKernel,
// cuLaunchKernelEx), cudaGraphLaunch, cuGraphLaunch, hipLaunch*,
// hipExtLaunch*, hipModuleLaunch*, hipExtModuleLaunchKernel,
// hipGraphLaunch.
// Sync: cudaStreamSynchronize, cudaDeviceSynchronize,
// cudaEventSynchronize, cudaThreadSynchronize, cuStreamSynchronize,
// cuEventSynchronize, cuCtxSynchronize and the hip equivalents.
// StreamWait: cudaStreamWaitEvent, cuStreamWaitEvent, hipStreamWaitEvent.
// Memcpy: names starting cudaMemcpy, cuMemcpy, hipMemcpy; asynchronous
// when the name contains "Async", blocking otherwise.
// Memset: cudaMemset*, cuMemset*, hipMemset*.
func RuntimeClassOf(name string) RuntimeClass {
	var rest string
	switch {
	case strings.HasPrefix(name, "cuda"):
		rest = name[4:]
	case strings.HasPrefix(name, "hip"):
		rest = name[3:]
	case strings.HasPrefix(name, "cu"):
		rest = name[2:]
	default:
		return RuntimeOther
	}
	switch {
	case strings.HasPrefix(rest, "Launch"), strings.HasPrefix(rest, "ExtLaunch"),
		strings.HasPrefix(rest, "ModuleLaunch"), strings.HasPrefix(rest, "ExtModuleLaunch"),
		rest == "GraphLaunch":
		return RuntimeLaunch
	case rest == "StreamSynchronize", rest == "DeviceSynchronize", rest == "EventSynchronize",
		rest == "ThreadSynchronize", rest == "CtxSynchronize":
		return RuntimeSync
	case rest == "StreamWaitEvent":
		return RuntimeStreamWait
	case strings.HasPrefix(rest, "Memcpy"):
		if strings.Contains(rest, "Async") {
			return RuntimeMemcpyAsync
		}
		return RuntimeMemcpyBlocking
	case strings.HasPrefix(rest, "Memset"):
		return RuntimeMemset
	}
	return RuntimeOther
}

// IsDataLoader reports whether an annotation is a DataLoader fetch:
// "enumerate(DataLoader)#<iterator class>.__next__" (single- and
// multi-process iterators alike).
func IsDataLoader(name string) bool {
	return strings.HasPrefix(name, "enumerate(DataLoader)#") && strings.HasSuffix(name, ".__next__")
}

// IsTBDataLoader is the TensorBoard plugin's rule: IsDataLoader or any
// name starting "enumerate(DataPipe)#".
func IsTBDataLoader(name string) bool {
	return IsDataLoader(name) || strings.HasPrefix(name, "enumerate(DataPipe)#")
}

// Direction is a memcpy direction.
type Direction uint8

const (
	DirUnknown Direction = iota
	HtoD
	DtoH
	DtoD
	HtoH
	PtoP
)

var dirNames = [...]string{"unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"}

func (d Direction) String() string {
	if int(d) < len(dirNames) {
		return dirNames[d]
	}
	return "invalid"
}

// HostMem is the kind of host memory a copy touches.
type HostMem uint8

const (
	HostNone     HostMem = iota // no host side (DtoD, PtoP) or not stated
	HostPinned                  // page-locked
	HostPageable                // pageable: the driver stages it, and the copy blocks
	HostManaged                 // unified memory
)

var hostMemNames = [...]string{"", "pinned", "pageable", "managed"}

func (h HostMem) String() string {
	if int(h) < len(hostMemNames) {
		return hostMemNames[h]
	}
	return "invalid"
}

// Memcpy describes a device memcpy event from its name, e.g.
// "Memcpy HtoD (Pinned -> Device)" or "Memcpy DtoH (Device -> Pageable)".
// Host is the host-side memory kind when the name states it.
func Memcpy(name string) (dir Direction, host HostMem) {
	switch {
	case strings.Contains(name, "HtoD"):
		dir = HtoD
	case strings.Contains(name, "DtoH"):
		dir = DtoH
	case strings.Contains(name, "DtoD"):
		dir = DtoD
	case strings.Contains(name, "HtoH"):
		dir = HtoH
	case strings.Contains(name, "PtoP"):
		dir = PtoP
	}
	switch {
	case strings.Contains(name, "Pinned"):
		host = HostPinned
	case strings.Contains(name, "Pageable"):
		host = HostPageable
	case strings.Contains(name, "Managed"):
		host = HostManaged
	}
	return dir, host
}

// Dtype maps one entry of an op's "Input type" list ("float", "double",
// "c10::Half", "c10::BFloat16", "c10::Float8_e4m3fn", ...) to fp64, fp32,
// fp16, bf16 or fp8; "" for the rest (integers, bool, Scalar, "").
func Dtype(s string) string {
	l := strings.ToLower(s)
	switch {
	case strings.Contains(l, "bfloat16"):
		return "bf16"
	case strings.Contains(l, "half") || l == "float16":
		return "fp16"
	case strings.Contains(l, "float8"):
		return "fp8"
	case l == "double" || l == "float64":
		return "fp64"
	case l == "float" || l == "float32":
		return "fp32"
	}
	return ""
}

// InputDtype is the precision op event i computes in: the first floating
// dtype of its "Input type" list ("" when it has none or the trace
// recorded no types).
func InputDtype(t *trace.Trace, i int) string {
	s, ok := t.ArgStr(i, trace.KeyInputType)
	if !ok {
		return ""
	}
	for part := range strings.SplitSeq(strings.Trim(s, "[]"), ",") {
		if dt := Dtype(strings.Trim(strings.TrimSpace(part), `"`)); dt != "" {
			return dt
		}
	}
	return ""
}
