package rundir

import (
	"math"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
)

// Format values of the per-process files.
const (
	EvidenceFormat   = "bottleneck.evidence"
	ProcessEnvFormat = "bottleneck.env"
	EnvSummaryFormat = "bottleneck.env-summary"
)

// Change is one run-time change the agent made (or could not make).
type Change struct {
	// Name and Value are as asked (AgentConfig.Set).
	Name  string `json:"name"`
	Value string `json:"value"`
	// Applied: the change took effect at least once; Sites say where,
	// one line each ("DataLoader at train.py:40: num_workers 0 -> 4",
	// "torch.set_num_threads(8) at train.py:12 kept at 2").
	Applied bool     `json:"applied"`
	Sites   []string `json:"sites,omitempty"`
	// Error says why it could not be applied ("" when it was).
	Error string `json:"error,omitempty"`
}

// Missing is something the run could not record, and why.
type Missing struct {
	Tag  string `json:"tag,omitempty"`
	What string `json:"what"`
	Why  string `json:"why"`
}

// Env is a process's environment, env-<tag>.json (the fields bottleneck reads).
type Env struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Python  struct {
		Version        string `json:"version"`
		Implementation string `json:"implementation"`
		Executable     string `json:"executable"`
	} `json:"python"`
	Platform    string `json:"platform"`
	CPUCount    int    `json:"cpu_count"`
	CPUAffinity int    `json:"cpu_affinity"`
	// CPUQuota is the CPUs the process's cgroup lets it use a period (a
	// container's --cpus, a Kubernetes limit; nil: unlimited or unknown).
	CPUQuota *float64 `json:"cpu_quota"`
	// CPUFeatures are the reduced-precision and vector features of the
	// CPU (nil: unknown, agents before it or not Linux).
	CPUFeatures []string `json:"cpu_features"`
	// TransparentHugePages is the kernel's mode: always, madvise or never
	// ("": unknown).
	TransparentHugePages string `json:"transparent_hugepages"`
	// MemoryBytes is the memory the process may use: the machine's, or
	// its cgroup's limit where lower (0: unknown).
	MemoryBytes int64             `json:"memory_bytes"`
	LoadAverage *float64          `json:"load_average"`
	EnvVars     map[string]string `json:"env"`
	Packages    map[string]string `json:"packages"`
	Torch       *struct {
		Version           string         `json:"version"`
		Build             string         `json:"build"`
		CUDA              *string        `json:"cuda"`
		HIP               *string        `json:"hip"`
		CuDNN             any            `json:"cudnn"`
		NCCL              any            `json:"nccl"`
		NumThreads        int            `json:"num_threads"`
		NumInteropThreads int            `json:"num_interop_threads"`
		KinetoAvailable   bool           `json:"kineto_available"`
		Activities        []string       `json:"profiler_activities"`
		CUDAInitialized   bool           `json:"cuda_initialized"`
		Flags             map[string]any `json:"flags"`
		Devices           []struct {
			Index       int    `json:"index"`
			Name        string `json:"name"`
			TotalMemory int64  `json:"total_memory"`
			Capability  string `json:"capability"`
		} `json:"devices"`
		Distributed map[string]any `json:"distributed"`
	} `json:"torch"`
}

// CPUs is the CPUs the process may use: those it may run on, no more
// than its cgroup's quota, rounded, allows, and at least one (0: unknown).
// torch sizes its intra-op threads by RunsOn alone. Rounded: mnist's CNN
// at a quota of 1.25 CPUs ran 1.35x faster on one thread than on two, at
// 1.5 CPUs 1.3x slower.
func (e *Env) CPUs() int {
	n := e.RunsOn()
	if n > 0 && e.CPUQuota != nil && *e.CPUQuota > 0 {
		n = min(n, max(1, int(math.Round(*e.CPUQuota))))
	}
	return n
}

// RunsOn is the CPUs the process may run on: its affinity where known,
// else the machine's count (0: unknown).
func (e *Env) RunsOn() int {
	if e == nil {
		return 0
	}
	if e.CPUAffinity > 0 {
		return e.CPUAffinity
	}
	return e.CPUCount
}

// Evidence is what the agent recorded in one process,
// evidence-<tag>.json (docs/run.md, "Evidence").
type Evidence struct {
	Format     string         `json:"format"`
	Version    int            `json:"version"`
	Tag        string         `json:"tag"`
	PID        int            `json:"pid"`
	Final      bool           `json:"final"`
	StartUnix  float64        `json:"start_unix"`
	EndUnix    float64        `json:"end_unix"`
	Exit       map[string]any `json:"exit"`
	StepSource *string        `json:"step_source"`
	// StepSourceSwitch is set when the steps first locked on module
	// forwards or DataLoader batches and moved to optimizer steps when an
	// optimizer stepped later (the steps, window and trace before it were
	// dropped).
	StepSourceSwitch *StepSourceSwitch `json:"step_source_switch"`
	// StepStages: where another optimizer took over the steps, the first
	// having stopped stepping (training in stages).
	StepStages []StepStage    `json:"step_stages"`
	StepCounts map[string]int `json:"step_counts"`
	Steps      int            `json:"steps"`
	StepStats  struct {
		Count int      `json:"count"`
		SumS  float64  `json:"sum_s"`
		MinS  *float64 `json:"min_s"`
		MaxS  *float64 `json:"max_s"`
		MeanS *float64 `json:"mean_s"`
	} `json:"step_stats"`
	Profiler struct {
		State    string         `json:"state"`
		Schedule map[string]int `json:"schedule"`
		// ActiveSteps is the recorded steps per window: the schedule's
		// active, or more when those steps were shorter than the
		// minimum window (0 before a window started, and from agents
		// before it).
		ActiveSteps int `json:"active_steps"`
		// EarlyStart: the first window started at Step, before
		// skip_first and with one warm-up step, as the two steps before
		// it took StepS each, at least ProfilerConfig.EarlyStartS (nil:
		// the schedule as set).
		EarlyStart *struct {
			Step  int       `json:"step"`
			StepS []float64 `json:"step_s"`
		} `json:"early_start"`
		Activities []string         `json:"activities"`
		Windows    []ProfilerWindow `json:"windows"`
	} `json:"profiler"`
	WindowSteps []WindowStep `json:"window_steps"`
	// Optimizers: what each optimizer updates, read at its first step
	// (agents before it leave this empty).
	Optimizers []Optimizer `json:"optimizers"`
	// Models: the outermost modules the program called in its first
	// module calls, by class and the program's line that called them,
	// most calls first (agents before it leave this empty).
	Models []ModelCall `json:"models"`
	// ProgramOptions: the program's own command-line options, of the
	// argparse parser with the most of them (nil: none parsed, or an
	// agent before it).
	ProgramOptions []ProgramOption `json:"program_options"`
	// StepTimes: [step, start s, duration s, in window, CPU wait s or
	// null, DataLoader wait s, items or null] of every step (the agent
	// keeps the first 20000; older agents wrote four to six columns);
	// StepSeries decodes them.
	StepTimes [][]any `json:"step_times"`
	// DeviceBehindS is how long the agent waited, at the end of the last
	// step before each window, for the device work the host had queued
	// ahead (CUDA only): that step's time in StepTimes holds the wait, so
	// the steps before a window sum to the device's time, not the host's.
	// A wait that is a large part of those steps says the host ran ahead
	// of the device, and their median is the host's step. Nil without a
	// wait, and from agents before it. DeviceBehind: each wait, with the
	// step it was charged to.
	DeviceBehindS *float64     `json:"device_behind_s"`
	DeviceBehind  []DeviceWait `json:"device_behind"`
	// StepInputs: the tensor shapes the step's forward got at the first
	// and the latest step, with forward steps (nil otherwise, and from
	// agents before it).
	StepInputs *StepInputs `json:"step_inputs"`
	// StepCalls: the counting of the steps' outermost module calls
	// (nil: none counted).
	StepCalls *StepCalls `json:"step_calls"`
	// PerStep: memory and garbage collection at every step boundary
	// (_bottleneck_stepstats.py); nil from agents without it.
	PerStep *PerStep `json:"per_step"`
	// FrameworkPhases: a Lightning or Hugging Face Trainer run's time by
	// the framework's own actions (_bottleneck_frameworks.py); nil when
	// the program used neither.
	FrameworkPhases *FrameworkPhases `json:"framework_phases"`
	// CPUWait: the main thread's scheduling over the run and the recorded
	// window (nil off Linux, or from agents before it).
	CPUWait *CPUWait `json:"cpu_wait"`
	// Children: the processes the program started itself (nil: none, or
	// agents before it).
	Children   *Children `json:"children,omitempty"`
	DataLoader struct {
		Batches       int          `json:"batches"`
		WaitS         float64      `json:"wait_s"`
		WindowBatches int          `json:"window_batches"`
		WindowWaitS   float64      `json:"window_wait_s"`
		Loaders       []LoaderInfo `json:"loaders"`
	} `json:"dataloader"`
	Syncs struct {
		State string     `json:"state"`
		Total int        `json:"total"`
		Sites []SyncSite `json:"sites"`
	} `json:"syncs"`
	PythonProfiler string `json:"python_profiler"`
	// NVTX: the ranges --nvtx emitted (nil without it).
	NVTX    *NVTXRanges `json:"nvtx,omitempty"`
	Missing []Missing   `json:"missing"`
	Errors  []string    `json:"errors"`
	Notes   []string    `json:"notes"`
	// Changes are the run-time changes the agent was asked to make
	// (AgentConfig.Set: bottleneck try, run --verify), each with where it
	// took effect; empty in an ordinary run.
	Changes []Change `json:"changes,omitempty"`
}

// CPUWait is the main thread's scheduling (Linux schedstat) over the
// whole run, over the recorded window(s), and over the other steps read
// (Steps: not the profiler's warm-up, nor the one its trace's export
// falls in; nil from agents before it).
type CPUWait struct {
	Run    *ThreadSched `json:"run"`
	Window *ThreadSched `json:"window"`
	Steps  *ThreadSched `json:"steps"`
}

// Children are the processes the program started with multiprocessing
// (mp.Process targets, a Pool's workers; DataLoader workers aside): how
// many, the most alive at one reading, and their threads' scheduling
// summed over the parent's readings of their schedstat, about once a
// second while one was alive (WallS): seconds on a CPU and runnable but
// waiting for one (_bottleneck_children.py).
type Children struct {
	Processes int     `json:"processes"`
	MostAlive int     `json:"most_alive"`
	WallS     float64 `json:"wall_s"`
	CPUS      float64 `json:"cpu_s"`
	WaitS     float64 `json:"wait_s"`
}

// Runnable is the threads that wanted a CPU on average over the span:
// on one or waiting for one (0 for an empty span).
func (c *Children) Runnable() float64 {
	if c == nil || c.WallS <= 0 {
		return 0
	}
	return (c.CPUS + c.WaitS) / c.WallS
}

// WaitShare is the share of the threads' runnable time spent waiting for
// a CPU (0 for an empty span).
func (c *Children) WaitShare() float64 {
	if c == nil || c.CPUS+c.WaitS <= 0 {
		return 0
	}
	return c.WaitS / (c.CPUS + c.WaitS)
}

// Oversubscribed reports whether the children's threads, read over at
// least a second, wanted more of the cpus than there are on average (by
// over half a thread) and waited for one at least a fifth of their
// runnable time: each child starts with torch's default of an intra-op
// thread per CPU (pytorch/examples' mnist_hogwild, 2 children on 2 CPUs:
// 3.5 threads runnable, 54% waiting; 86-160 s, 17 s with one thread
// each).
func (c *Children) Oversubscribed(cpus int) bool {
	return c != nil && cpus > 0 && c.WallS >= 1 && c.Runnable() > float64(cpus)+0.5 && c.WaitShare() >= 0.2
}

// ThreadsEach is the intra-op threads each child fits on cpus: its share
// of them with as many alive as at most, at least one.
func (c *Children) ThreadsEach(cpus int) int {
	return max(1, cpus/max(1, c.MostAlive))
}

// ThreadSched is a span of the main thread's life (seconds): its wall
// time, its time on a CPU and its time runnable but waiting for a CPU
// (the run queue: other threads or processes held the CPUs); the CPU time
// of every thread of the process; the machine's 1-minute load average
// at the span's end.
type ThreadSched struct {
	WallS       float64 `json:"wall_s"`
	CPUS        float64 `json:"cpu_s"`
	WaitS       float64 `json:"wait_s"`
	ProcessCPUS float64 `json:"process_cpu_s"`
	// ProcessSystemS is the part of ProcessCPUS in the kernel, and
	// MinorFaults the process's minor page faults (pages first touched)
	// over the span (0: agents before them).
	ProcessSystemS float64  `json:"process_system_s"`
	MinorFaults    float64  `json:"minor_faults"`
	LoadAverage    *float64 `json:"load_average"`
}

// SystemShare is the share of the process's CPU time in the span that
// the kernel spent (0 for a nil or empty span).
func (t *ThreadSched) SystemShare() float64 {
	if t == nil || t.ProcessCPUS <= 0 {
		return 0
	}
	return min(t.ProcessSystemS/t.ProcessCPUS, 1)
}

// WaitShare is the share of the span's wall time spent waiting for a CPU
// (0 for a nil or empty span).
func (t *ThreadSched) WaitShare() float64 {
	if t == nil || t.WallS <= 0 {
		return 0
	}
	return min(t.WaitS/t.WallS, 1)
}

// FrameworkPhases is the whole run's time in a framework's actions
// (docs/run.md, "Framework phases"): actions nest, and an action's self
// time leaves out the actions nested in it, so the self times of Phases
// and OutsideS add up to WallS, the span from the first action's start to
// the last one's end.
type FrameworkPhases struct {
	Framework string  `json:"framework"` // lightning, transformers
	WallS     float64 `json:"wall_s"`
	OutsideS  float64 `json:"outside_s"`
	Phases    []Phase `json:"phases"` // by self time, largest first
}

// Phase is one action name's whole-run totals.
type Phase struct {
	Name   string  `json:"name"`
	Calls  int     `json:"calls"`
	TotalS float64 `json:"total_s"`
	SelfS  float64 `json:"self_s"`
}

// WindowStep is one step of the recorded window.
type WindowStep struct {
	Window            int     `json:"window"`
	Step              int     `json:"step"`
	DurationS         float64 `json:"duration_s"`
	DataLoaderWaitS   float64 `json:"dataloader_wait_s"`
	DataLoaderBatches int     `json:"dataloader_batches"`
	Syncs             int     `json:"syncs"`
}

// LoaderInfo is one DataLoader the program iterated.
type LoaderInfo struct {
	ID                 int     `json:"id"`
	Iterator           string  `json:"iterator"`
	NumWorkers         *int    `json:"num_workers"`
	PinMemory          *bool   `json:"pin_memory"`
	PersistentWorkers  *bool   `json:"persistent_workers"`
	PrefetchFactor     *int    `json:"prefetch_factor"`
	BatchSize          *int    `json:"batch_size"`
	Dataset            string  `json:"dataset"`
	Iterable           bool    `json:"iterable"`
	MultiprocessingCtx string  `json:"multiprocessing_context"`
	Batches            int     `json:"batches"`
	WaitS              float64 `json:"wait_s"`
	MaxWaitS           float64 `json:"max_wait_s"`
	// Iterators: the iterators made (one per epoch unless the workers
	// persist); RestartS: making them (the worker processes' start) and
	// the calls that ended their epochs (the workers' shutdown), outside
	// WaitS; FirstWaitS: the wait for their first batches, inside it.
	// Loaders: the DataLoader objects that made them (with workers; 1
	// from agents before it): one per pass when the program makes its
	// loader in the loop.
	Iterators  int     `json:"iterators"`
	Loaders    int     `json:"loaders"`
	RestartS   float64 `json:"restart_s"`
	FirstWaitS float64 `json:"first_wait_s"`
	// Starts: [step, seconds since the agent's start] of each iterator's
	// making (StepTimes' numbers and clock; the first 64; nil from agents
	// before it).
	Starts [][2]float64 `json:"starts"`
	// StopS: the calls that ended the epochs (the workers' shutdown; in
	// RestartS too).
	StopS float64 `json:"stop_s"`
	// BatchBytes: the bytes of the tensors in its first batch (nil from
	// agents before it).
	BatchBytes *int64 `json:"batch_bytes"`
	// Site is the program's line that took its first batch (the loop
	// over it); nil from agents before it.
	Site *Site `json:"site"`
	// MemoryShape: for a torchvision dataset that holds its samples as
	// one array (MNIST's, CIFAR's .data), the array's shape; Transforms
	// the class names of its transform's parts, in order;
	// TargetTransform whether it transforms the targets too.
	MemoryShape     []int    `json:"memory_shape,omitempty"`
	Transforms      []string `json:"transforms,omitempty"`
	TargetTransform bool     `json:"target_transform,omitempty"`
}

// Site is a line of the program's own code.
type Site struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Func string `json:"func"`
}

// SyncSite is the user call site of implicit host-device syncs.
type SyncSite struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Func  string `json:"func"`
	Count int    `json:"count"`
}

// StepCalls is how the agent counted the steps' outermost nn.Module
// calls (the counts are in StepTimes): one step in every Period, and the
// class called most outermost on those steps.
type StepCalls struct {
	CountedSteps int    `json:"counted_steps"`
	Period       int    `json:"period"`
	Class        string `json:"class"`
	Module       string `json:"module"`
}

// StepInputs is what the step module's forward got at two steps.
type StepInputs struct {
	First *StepInput `json:"first"`
	Last  *StepInput `json:"last"`
}

// DeviceWait is one wait for the device at the end of a step (Evidence.DeviceBehind).
type DeviceWait struct {
	Step int     `json:"step"`
	S    float64 `json:"s"`
}

// StepInput is the shapes of the first (up to four) tensor arguments of
// the forward call that began Step.
type StepInput struct {
	Step   int       `json:"step"`
	Shapes [][]int64 `json:"shapes"`
}

// StepSeries decodes StepTimes, skipping malformed rows.
func (ev *Evidence) StepSeries() []steptimes.Step {
	var out []steptimes.Step
	for _, row := range ev.StepTimes {
		if len(row) < 4 {
			continue
		}
		n, ok1 := row[0].(float64)
		start, ok2 := row[1].(float64)
		d, ok3 := row[2].(float64)
		in, ok4 := row[3].(bool)
		if ok1 && ok2 && ok3 && ok4 {
			st := steptimes.Step{N: int(n), StartS: start, DurS: d, InWindow: in}
			if len(row) > 4 { // agents before it wrote four columns; null: not measured
				st.CPUWaitS, _ = row[4].(float64)
			}
			if len(row) > 5 {
				st.LoaderWaitS, _ = row[5].(float64)
			}
			if len(row) > 6 {
				items, _ := row[6].(float64)
				st.Items = int(items)
			}
			if len(row) > 7 {
				calls, _ := row[7].(float64)
				st.Calls = int(calls)
			}
			out = append(out, st)
		}
	}
	return out
}

// PerStep is the agent's whole-run per-step record of memory and garbage
// collection (docs/run.md, "Step statistics").
type PerStep struct {
	// RawRows: [step, RSS bytes, CUDA allocated bytes or null, GC pause s,
	// collections, in window]; Rows decodes them. Stride: every Stride-th
	// step is kept (long runs).
	RawRows [][]any `json:"rows"`
	Stride  int     `json:"stride"`
	GC      struct {
		PauseS      float64 `json:"pause_s"`
		Generations map[string]struct {
			Collections int     `json:"collections"`
			PauseS      float64 `json:"pause_s"`
		} `json:"generations"`
		Sites []GCSite `json:"sites"`
	} `json:"gc"`
	// Growth: variables of the training loop's frame that grew between two
	// probes of the run and hold tensors.
	Growth []Growth `json:"growth"`
	// ThreadCalls: the program's calls of torch.set_num_threads and
	// set_num_interop_threads, in order.
	ThreadCalls []ThreadCall `json:"thread_calls"`
	// SettingCalls: the program's calls of torch.set_default_dtype and
	// torch.set_anomaly_enabled (torch.autograd.set_detect_anomaly and
	// detect_anomaly make them), in order.
	SettingCalls []SettingCall `json:"setting_calls"`
	Errors       []string      `json:"errors"`
}

// StepRow is one step boundary of PerStep.
type StepRow struct {
	Step     int
	RSS      float64 // bytes, 0 unknown
	CUDA     float64 // bytes allocated by torch on the device, -1 unknown
	GCPauseS float64
	GCCount  int
	InWindow bool
}

// Rows decodes RawRows, skipping malformed ones.
func (p *PerStep) Rows() []StepRow {
	var out []StepRow
	for _, r := range p.RawRows {
		if len(r) < 6 {
			continue
		}
		n, ok1 := r[0].(float64)
		g, ok2 := r[3].(float64)
		c, ok3 := r[4].(float64)
		w, ok4 := r[5].(bool)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			continue
		}
		row := StepRow{Step: int(n), CUDA: -1, GCPauseS: g, GCCount: int(c), InWindow: w}
		if v, ok := r[1].(float64); ok {
			row.RSS = v
		}
		if v, ok := r[2].(float64); ok {
			row.CUDA = v
		}
		out = append(out, row)
	}
	return out
}

// GCSite is the user line running when a collection of at least 0.2 ms
// began; Explicit: the line calls gc.collect.
type GCSite struct {
	File     string  `json:"file"`
	Line     int     `json:"line"`
	Func     string  `json:"func"`
	Count    int     `json:"count"`
	PauseS   float64 `json:"pause_s"`
	Explicit bool    `json:"explicit"`
}

// ThreadCall is one call of torch.set_num_threads ("set_num_threads") or
// torch.set_num_interop_threads and where the program made it.
type ThreadCall struct {
	Call  string `json:"call"`
	Value *int   `json:"value"`
	File  string `json:"file"`
	Line  int    `json:"line"`
	Func  string `json:"func"`
}

// SettingCall is a call of a torch setting at the program's line; Arg is
// its first argument as Python prints it (torch.float64, True).
type SettingCall struct {
	Call string `json:"call"`
	Arg  string `json:"arg"`
	File string `json:"file"`
	Line int    `json:"line"`
	Func string `json:"func"`
}

// Growth is a variable of the training loop that grew every step.
type Growth struct {
	Name      string  `json:"name"`
	Scope     string  `json:"scope"`    // local, global
	Kind      string  `json:"kind"`     // list, dict, set, deque, autograd graph
	PerStep   float64 `json:"per_step"` // items (autograd nodes for a graph) added per step
	Size      int     `json:"size"`
	Holds     string  `json:"holds"` // tensor, tensor with autograd graph
	ItemBytes int64   `json:"item_bytes"`
	File      string  `json:"file"`
	Line      int     `json:"line"`
	Func      string  `json:"func"`
}

// Optimizer is one optimizer's parameters at its first step.
type Optimizer struct {
	Class   string `json:"class"`
	Foreach *bool  `json:"foreach"`
	Fused   *bool  `json:"fused"`
	Params  int    `json:"params"`
	Numel   int64  `json:"numel"`
	// SparseGrads is how many parameters had a sparse gradient
	// (nn.Embedding(sparse=True)): fused=True raises on them.
	SparseGrads int              `json:"sparse_grads"`
	Largest     []OptimizerParam `json:"largest"`
	// StepSite is the program's line that called step() first.
	StepSite *Site  `json:"step_site"`
	Error    string `json:"error"`
}

// ProgramOption is one of the program's command-line options and the
// value it parsed.
type ProgramOption struct {
	Flags []string `json:"flags"`
	Dest  string   `json:"dest"`
	// Kind: "switch" (store_true, store_false, store_const,
	// BooleanOptionalAction, whose --no- flag is left out) or "value".
	Kind string `json:"kind"`
	// Sets: the value a switch's flag sets (store_false: false), or a
	// value option's when given bare (nargs="?" with a const).
	Sets any `json:"sets,omitempty"`
	// Value: the parsed value (null: none, or not a bool, number or
	// short text).
	Value   any   `json:"value"`
	Choices []any `json:"choices,omitempty"`
}

// ModelCall is an outermost nn.Module the program calls, and where.
type ModelCall struct {
	Class  string `json:"class"`
	Module string `json:"module"`
	File   string `json:"file"`
	Line   int    `json:"line"`
	Func   string `json:"func"`
	Calls  int    `json:"calls"`
	// Layers: its Linear and convolution modules (each runs once a call
	// unless the model loops), of the first 20,000 modules walked.
	Layers int `json:"layers,omitempty"`
	// Input is the shape of its first call's first tensor argument
	// (absent when it had none): a model called on one sample at a time
	// has no batch dimension, or one of 1.
	Input []int64 `json:"input,omitempty"`
	// Convs: the model's convolutions (transposed ones left out);
	// Depthwise: those with one filter per input channel;
	// StridedDepthwise: those of them with a stride over 1.
	Convs            int `json:"convs,omitempty"`
	Depthwise        int `json:"depthwise,omitempty"`
	StridedDepthwise int `json:"strided_depthwise,omitempty"`
	// NoGrad: its first call ran with gradients off (torch.no_grad or
	// inference_mode): a frozen model whose outputs train nothing (a
	// distillation's teacher, a frozen encoder), or an evaluation's.
	NoGrad bool `json:"no_grad,omitempty"`
	// Padding is what the attention_mask of its first calls said, nil
	// when they had none.
	Padding *Padding `json:"padding,omitempty"`
}

// Padding sums a model's calls' attention_mask (1 for a token, 0 for
// padding): the positions computed (batch x length), the real tokens, and
// the positions of each batch padded to its own longest sequence.
type Padding struct {
	Calls   int   `json:"calls"`
	Tokens  int64 `json:"tokens"`
	Real    int64 `json:"real"`
	Longest int64 `json:"longest"`
}

// OptimizerParam is one of an optimizer's largest parameters.
type OptimizerParam struct {
	Shape      []int64 `json:"shape"`
	Numel      int64   `json:"numel"`
	DType      string  `json:"dtype"`
	SparseGrad bool    `json:"sparse_grad"`
	// GradRows is, for a 2-D dense gradient, the rows that were not all
	// zero at the first step: an embedding table's rows the step's
	// batches looked up (absent when not measured).
	GradRows *int64 `json:"grad_rows,omitempty"`
}

// ProfilerWindow is one window's trace file and the steps it recorded.
type ProfilerWindow struct {
	Index   int     `json:"index"`
	File    string  `json:"file"`
	Partial bool    `json:"partial"`
	Steps   []int   `json:"steps"`
	Bytes   int64   `json:"bytes"`
	ExportS float64 `json:"export_s"`
	Error   string  `json:"error"`
	// ClosedBy is the bound that closed the window before its last step
	// ("idle": steps stopped coming, "wall": open too long, "memory": the
	// process grew too much while recording), ClosedDetail its measure; empty when it ran its
	// steps (docs/run.md, "Window bounds").
	ClosedBy     string `json:"closed_by"`
	ClosedDetail string `json:"closed_detail"`
}

// StepSourceSwitch records the step source's move to optimizer steps.
type StepSourceSwitch struct {
	From       string  `json:"from"`
	To         string  `json:"to"`
	AfterSteps int     `json:"after_steps"`
	AtS        float64 `json:"at_s"`
	Dropped    int     `json:"windows_dropped"`
	Why        string  `json:"why"`
}

// StepStage is a later stage of training: from the step after AfterStep
// the steps are another optimizer's; its Untimed steps before were not.
type StepStage struct {
	AfterStep int     `json:"after_step"`
	AtS       float64 `json:"at_s"`
	Untimed   int     `json:"untimed"`
	Optimizer string  `json:"optimizer"`
	Site      *Site   `json:"site,omitempty"`
}

// NVTXRanges are the NVTX ranges `bottleneck run --nvtx` emitted for
// Nsight Systems (docs/run.md, "NVTX ranges for Nsight Systems").
type NVTXRanges struct {
	Mode  string `json:"mode"`  // steps | ops
	State string `json:"state"` // waiting | on | unavailable | closed | forked
	Why   string `json:"why"`   // why unavailable
	// StepRanges are the "step N" ranges; Pushed and Popped every range
	// (equal once the run ended in the steps' thread).
	StepRanges int `json:"step_ranges"`
	Pushed     int `json:"pushed"`
	Popped     int `json:"popped"`
	// FirstDepth is what the first range_push returned: the range's depth
	// when a tool (nsys) collects them, -2 when none was attached.
	FirstDepth   *int   `json:"first_depth"`
	ClosedAtExit int    `json:"closed_at_exit"` // ranges the program left open, popped by the agent's finish
	LeftOpen     int    `json:"left_open"`      // ... that it could not pop (it finished in another thread)
	Ops          string `json:"ops"`            // --nvtx=ops: entered | skipped: ... | failed: ...
}
