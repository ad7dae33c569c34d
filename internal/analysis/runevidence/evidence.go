// Package runevidence turns what `bottleneck run`'s agent recorded for a
// process (its run directory's step rows, Python profile, DataLoader and
// environment records) into the evidence the diagnosis judges: step
// trends, periodic steps, the Python profile's hot lines and what they
// do, read from the program's own source where the stacks alone cannot
// tell (a no_grad block, a tensor built from lists, a DataFrame read row
// by row). It gathers; internal/diagnose judges.
package runevidence

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
)

// RunEvidence is what `bottleneck run`'s agent recorded for one process,
// reduced to what the diagnosis uses (docs/run.md describes the files).
type RunEvidence struct {
	// NotOwnS is, by step number, what each step spent in garbage
	// collection and waiting for a CPU: time that comes every so many
	// allocations or when other processes run, not work the step does
	// every N steps (steps.periodic leaves it out).
	NotOwnS map[int]float64 `json:"-"`
	Tag     string          `json:"tag"`
	Rank    int             `json:"rank"`
	// CutTraces are, by the base name of their trace file, the windows
	// whose recording did not end at a step's end: the program ended
	// during them (partial), or a bound closed them.
	CutTraces map[string]CutWindow `json:"cut_traces,omitempty"`
	// WindowStepS is the mean step of the recorded window (seconds);
	// DataLoaderWaitS the mean DataLoader wait per window step; both
	// leave out the window's steps over twice its median, as the trace's
	// analyses do.
	WindowStepS float64 `json:"window_step_s"`
	// OutsideStepS is the median step outside the recorded window, after
	// the first steps (0 when too few): the steps without the profiler;
	// WindowMedianS the median step inside it.
	OutsideStepS float64 `json:"outside_step_s,omitempty"`
	// OutsideWorkS and WindowWorkS are the same medians of the steps less
	// their waits for a DataLoader: a window whose steps took batches
	// the workers had loaded before it compares with steps that waited.
	OutsideWorkS float64 `json:"outside_work_s,omitempty"`
	WindowWorkS  float64 `json:"window_work_s,omitempty"`
	// RunMedianStepS: the median of every step outside the window after
	// the first startupSteps (0 when fewer than 3).
	RunMedianStepS float64 `json:"run_median_step_s,omitempty"`
	WindowMedianS  float64 `json:"window_median_step_s,omitempty"`
	// WindowOutlierShare: the share of the window's time that its steps
	// over twice its median spend above the median, where work every N
	// steps (an evaluation, a checkpoint) lands in a long window.
	WindowOutlierShare float64 `json:"window_outlier_share,omitempty"`
	// StepSource is what the agent took a step to be: "optimizer",
	// "dataloader", "forward", "closure" (each evaluation of the closure
	// of an optimizer.step(closure) that ran long: docs/run.md) ("" unknown).
	StepSource string `json:"step_source,omitempty"`
	// SettledStep: the step after the window from which every run of
	// settleSteps steps has its median within 1.3x the median of the
	// run's second half, with room for a window after it (0: never, or
	// too few steps): where a later window finds the program's usual step.
	SettledStep int `json:"settled_step,omitempty"`
	// Slowing: the steps outside the window get slower and slower over
	// the run (nil: they do not).
	Slowing *StepGrowth `json:"slowing,omitempty"`
	// InputGrowth: the step module's forward got a larger input at the
	// latest step than at the first (nil: not, or no forward steps).
	InputGrowth *InputGrowth `json:"input_growth,omitempty"`
	// StepCalls: how the agent counted the steps' outermost module calls
	// (nil: none counted); StepCallsMedian: the median count over the
	// counted steps after start-up (0: none).
	StepCalls       *rundir.StepCalls `json:"step_calls,omitempty"`
	StepCallsMedian float64           `json:"step_calls_median,omitempty"`
	// OneSample: the step module's forward got one sample at its first
	// and its latest step, every tensor argument's first dimension 1
	// (the latest; nil: not, or no forward steps).
	OneSample *rundir.StepInput `json:"one_sample,omitempty"`
	// BusierMachine: the steps got slower the same way, but only by
	// waiting longer for a CPU: the machine got busier, not the program's
	// work (nil: no such growth).
	BusierMachine *StepGrowth `json:"busier_machine,omitempty"`
	// MoreItems: the steps got slower, but each did more items (calls of
	// a model called on one sample) and the time per item did not grow
	// (nil: no such growth, or items not counted).
	MoreItems *StepGrowth `json:"more_items,omitempty"`
	// RunLoaderWaitShare: the DataLoader's wait over the whole run, the
	// wait for each iterator's first batch left out (worker start-up, an
	// epoch's restart: input.loader's), as a share of all its steps' time
	// (0 without a DataLoader).
	RunLoaderWaitShare float64 `json:"run_loader_wait_share,omitempty"`
	// WindowLoaderWaitShare: the same over every step of the window, its
	// slow ones too (a round of batches from N workers makes every Nth
	// step wait, and an outlier).
	WindowLoaderWaitShare float64 `json:"window_loader_wait_share,omitempty"`
	// StepsS: the time of all the run's steps (the agent's step_stats);
	// FirstStepS: when the first began, since the agent started (with
	// the interpreter).
	StepsS     float64 `json:"steps_s,omitempty"`
	FirstStepS float64 `json:"first_step_s,omitempty"`
	// StoppedAfterProfile: bottleneck ended the program once its window
	// was written (run --stop-after-profile, try): its steps are a few,
	// not the program's.
	StoppedAfterProfile bool `json:"stopped_after_profile,omitempty"`
	// Periodic: every Nth step outside the window is slow (nil: none).
	Periodic *PeriodicSteps `json:"periodic,omitempty"`
	// OneOff: the run's time outside its usual steps after the first one
	// began (nil: no steps, or none of it).
	OneOff          *OneOffWork     `json:"one_off,omitempty"`
	HasDataLoader   bool            `json:"has_dataloader"`
	DataLoaderWaitS float64         `json:"dataloader_wait_s"`
	Loaders         []Loader        `json:"loaders,omitempty"`
	SyncState       string          `json:"sync_state,omitempty"`
	SyncSites       []SyncSite      `json:"sync_sites,omitempty"`
	SyncsPerStep    float64         `json:"syncs_per_step"`
	Python          *PythonEvidence `json:"python,omitempty"`
	// Workers: the DataLoader worker processes' samples (nil: none
	// sampled, e.g. num_workers=0); WorkersReadDataFrameRows: as
	// PythonEvidence.LoaderDataFrameRows, for the workers' busy samples.
	Workers                  *pyprofile.WorkerSummary `json:"workers,omitempty"`
	WorkersReadDataFrameRows bool                     `json:"workers_dataframe_rows,omitempty"`
	Env                      *Env                     `json:"env,omitempty"`
	// Memory and GC: the agent's whole-run per-step record (nil from
	// agents without it).
	Memory *MemoryTrend `json:"memory,omitempty"`
	GC     *GCPauses    `json:"gc,omitempty"`
	// PeakRSS: the largest resident size the per-step record holds, in
	// bytes (0: unknown).
	PeakRSS float64 `json:"peak_rss,omitempty"`
	// Optimizers: what each optimizer updates (at its first step).
	Optimizers []rundir.Optimizer `json:"optimizers,omitempty"`
	// Models: the outermost modules the program called, most calls first.
	Models []rundir.ModelCall `json:"models,omitempty"`
	// Options: the program's own command-line options.
	Options []rundir.ProgramOption `json:"program_options,omitempty"`
	// Phases: Lightning's or the Hugging Face Trainer's phases over the
	// whole run (nil without either).
	Phases *rundir.FrameworkPhases `json:"framework_phases,omitempty"`
	// SetThreads is the program's last torch.set_num_threads call (nil:
	// none seen).
	SetThreads *rundir.ThreadCall `json:"set_threads,omitempty"`
	// DefaultDtype is the program's last torch.set_default_dtype call to
	// float64 (nil: none); Anomaly its last call that turned anomaly
	// detection on (nil: none).
	DefaultDtype *rundir.SettingCall `json:"default_dtype_call,omitempty"`
	Anomaly      *rundir.SettingCall `json:"anomaly_call,omitempty"`
	// SetInteropThreads is its last torch.set_num_interop_threads call.
	SetInteropThreads *rundir.ThreadCall `json:"set_interop_threads,omitempty"`
	// CPUWait: the main thread's time waiting for a CPU (nil: not
	// recorded).
	CPUWait *rundir.CPUWait `json:"cpu_wait,omitempty"`
	// Children: the processes the program started itself (nil: none
	// recorded).
	Children *rundir.Children `json:"children,omitempty"`
	// ThreadEnv holds OMP_NUM_THREADS and MKL_NUM_THREADS as the program's
	// environment set them (absent: unset).
	ThreadEnv map[string]string `json:"thread_env,omitempty"`
}

// MemoryTrend is the process's memory over the steps after start-up: a
// least-squares line through it, and the loop variables that grew.
type MemoryTrend struct {
	Source string `json:"source"` // cuda_allocated, rss
	Steps  int    `json:"steps"`
	// FirstBytes and LastBytes: the fitted line at the first and last step
	// used; SlopeBytes its growth per step; R2 how well it fits.
	FirstBytes float64 `json:"first_bytes"`
	LastBytes  float64 `json:"last_bytes"`
	SlopeBytes float64 `json:"slope_bytes_per_step"`
	R2         float64 `json:"r2"`
	// LateSlopeBytes: the growth per step of the line fitted to the later
	// half of the steps alone (a leak keeps growing; memory that rose
	// once, as the profiler's buffers or a cache filling, stays flat).
	LateSlopeBytes float64         `json:"late_slope_bytes_per_step"`
	Growing        []rundir.Growth `json:"growing,omitempty"`
}

// GCPauses is the garbage collector's time per step after start-up.
type GCPauses struct {
	Steps int `json:"steps"`
	// PausePerStepS and StepS: mean GC pause and mean step (seconds);
	// Share their ratio.
	PausePerStepS      float64         `json:"pause_per_step_s"`
	StepS              float64         `json:"step_s"`
	Share              float64         `json:"share"`
	CollectionsPerStep float64         `json:"collections_per_step"`
	Sites              []rundir.GCSite `json:"sites,omitempty"`
}

// Loader is one DataLoader's settings.
type Loader struct {
	Dataset           string `json:"dataset"`
	Iterable          bool   `json:"iterable,omitempty"`
	NumWorkers        *int   `json:"num_workers"`
	PinMemory         *bool  `json:"pin_memory"`
	PersistentWorkers *bool  `json:"persistent_workers"`
	BatchSize         *int   `json:"batch_size"`
	PrefetchFactor    *int   `json:"prefetch_factor"`
	// Batches, WaitS: the batches and the wait for them over the run;
	// Iterators: the iterators made (epochs, without persistent workers),
	// Loaders the DataLoader objects among them;
	// RestartS and FirstWaitS: making them and ending their epochs, and
	// the wait for their first batches (rundir.LoaderInfo).
	Batches    int     `json:"batches"`
	WaitS      float64 `json:"wait_s"`
	Iterators  int     `json:"iterators,omitempty"`
	Loaders    int     `json:"loaders,omitempty"`
	RestartS   float64 `json:"restart_s,omitempty"`
	FirstWaitS float64 `json:"first_wait_s,omitempty"`
	// RestartStepsS: from each iterator's making after the first to the
	// end of the next step, the time over what the steps take without it,
	// summed over the RestartsTimed restarts outside the window
	// (restartSteps): the restarts' whole cost, a fork's copy-on-write
	// faults in the main process and the new workers' first batches
	// included, which RestartS does not see.
	RestartStepsS float64 `json:"restart_steps_s,omitempty"`
	RestartsTimed int     `json:"restarts_timed,omitempty"`
	// StopS: the calls that ended the epochs, the workers' shutdown,
	// before each making (part of RestartS).
	StopS float64 `json:"stop_s,omitempty"`
	// BatchBytes: the bytes of its first batch's tensors (nil: unknown).
	BatchBytes *int64 `json:"batch_bytes,omitempty"`
	// Site is the program's line that loops over it.
	Site *rundir.Site `json:"site,omitempty"`
	// MemoryShape, Transforms, TargetTransform: a torchvision dataset
	// that holds its samples as one array (rundir.LoaderInfo).
	MemoryShape     []int    `json:"memory_shape,omitempty"`
	Transforms      []string `json:"transforms,omitempty"`
	TargetTransform bool     `json:"target_transform,omitempty"`
}

// SyncSite is a user line that caused implicit host-device syncs.
type SyncSite struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Func  string `json:"func"`
	Count int    `json:"count"`
}

// Env is the environment summary's part the rules read.
type Env struct {
	Torch string `json:"torch"`
	Build string `json:"build"`
	CUDA  string `json:"cuda,omitempty"`
	// CPUs: the CPUs the process may use (rundir.Env.CPUs);
	// CPUQuota: its cgroup's quota where that is less than the CPUs it
	// may run on (0: none).
	CPUs       int     `json:"cpus"`
	CPUQuota   float64 `json:"cpu_quota,omitempty"`
	NumThreads int     `json:"num_threads"`
	// LocalRanks: processes of the job on this machine (LOCAL_WORLD_SIZE,
	// 1 when unset); LoadAverage: the machine's 1-minute load when the
	// program started (-1 unknown).
	LocalRanks  int     `json:"local_ranks"`
	LoadAverage float64 `json:"load_average"`
	// CPUFeatures: the CPU's reduced-precision and vector features (nil:
	// unknown).
	CPUFeatures []string `json:"cpu_features,omitempty"`
	// MemoryBytes: the memory the process may use (0: unknown).
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Glibc: the C library is glibc (platform.platform()'s "-with-glibc");
	// Allocator: the program's environment's own settings of its
	// allocator, or another one preloaded ("": none).
	Glibc     bool   `json:"glibc,omitempty"`
	Allocator string `json:"allocator,omitempty"`
	// OpenMPWait: the program's environment's settings of how OpenMP's
	// threads wait for work ("": none, they spin a while, then sleep).
	OpenMPWait string         `json:"openmp_wait,omitempty"`
	Flags      map[string]any `json:"flags,omitempty"`
	Devices    []EnvDevice    `json:"devices,omitempty"`
}

// reducedPrecision is how the CPU runs dtype (bfloat16, float16): in
// hardware (AVX512-BF16/AMX on x86, the Arm extensions), or emulated,
// which oneDNN does far slower than float32; known false without a
// feature list.
func (e *Env) ReducedPrecision(dtype string) (native, known bool) {
	if e == nil || e.CPUFeatures == nil {
		return false, false
	}
	want := []string{"avx512_bf16", "amx_bf16", "bf16"}
	if dtype == "float16" {
		want = []string{"avx512_fp16", "amx_fp16", "fphp"}
	}
	return slices.ContainsFunc(e.CPUFeatures, func(f string) bool { return slices.Contains(want, f) }), true
}

// EnvDevice is one device torch saw.
type EnvDevice struct {
	Name       string `json:"name"`
	Capability string `json:"capability"`
}

// PythonEvidence is the main thread's Python profile, classified.
type PythonEvidence struct {
	Profiler string `json:"profiler"`
	// Window: the numbers are over the recorded window (else the whole run).
	Window  bool `json:"window"`
	Samples int  `json:"samples"`
	// OutliersLeftOut: the window's numbers leave out its outlier steps'
	// samples (OutlierSteps; the agent recorded the window's samples by
	// step), as the trace's leave out the window check's outliers. Else
	// they hold them, which RunEvidence.WindowOutlierShare estimates.
	OutliersLeftOut bool `json:"outliers_left_out,omitempty"`
	// IOShare and LoaderShare: fractions of the main thread's samples in
	// I/O code and in DataLoader code (a Dataset's file reads count as
	// DataLoader code); LoaderIOShare: the fraction of the DataLoader's
	// samples in I/O code (torch.load, np.load, pickle, h5py).
	IOShare float64 `json:"io_share"`
	// IOReadShare: of the I/O samples outside the DataLoader, the share
	// reading (the innermost I/O frame loads or reads: torch.load,
	// np.load, pickle.load), not writing (a checkpoint, a log).
	IOReadShare   float64 `json:"io_read_share,omitempty"`
	LoaderShare   float64 `json:"loader_share"`
	LoaderIOShare float64 `json:"loader_io_share,omitempty"`
	// LoaderDataFrameRows: the loading reads a DataFrame row by row: half
	// the DataLoader's samples inside pandas, or the function of its
	// first line indexes rows (df.iloc[i]; sourceCache.readsDataFrameRows).
	LoaderDataFrameRows bool `json:"loader_dataframe_rows,omitempty"`
	// Hot are the user lines with the most self samples outside I/O and
	// DataLoader code and not blocked (below); IOLines and LoaderLines the
	// user lines that led into I/O and DataLoader code.
	Hot []Line `json:"hot"`
	// ModuleShare: the fraction of the samples behind Hot taken inside an
	// nn.Module call (a frame in torch/nn/modules): the modules' Python
	// (__call__, hooks, Sequential's loop, forward) and their native ops.
	ModuleShare float64 `json:"module_share,omitempty"`
	// OutsideModelShare: the fraction of the samples behind Hot taken
	// with no frame of the model's forward, the backward or the optimizer
	// (modelFiles); OutsideModel their user lines, the program's own
	// tensor work, which torch.compile(model) does not reach. HotSamples:
	// the samples behind Hot.
	// Samples inside a library's data transform (dataTransformFiles)
	// count as outside the model, and OutsideTransform names the
	// transform ("Resample (torchaudio.transforms)") when half of them or
	// more ran in it.
	OutsideModelShare float64 `json:"outside_model_share,omitempty"`
	OutsideModel      []Line  `json:"outside_model,omitempty"`
	OutsideTransform  string  `json:"outside_transform,omitempty"`
	HotSamples        int     `json:"hot_samples,omitempty"`
	// OutsideFunc is the program function OutsideModel's lines run in,
	// callees included (ownFunc; nil: none holds most of them), and
	// OutsideFuncCaller the program line that called it most.
	OutsideFunc       *Line `json:"outside_func,omitempty"`
	OutsideFuncCaller *Line `json:"outside_func_caller,omitempty"`
	// CPUAutocast: the autocast block on the CPU that the samples behind
	// Hot ran under most (nil: none), and their share.
	CPUAutocast *AutocastBlock `json:"cpu_autocast,omitempty"`
	// AnomalyShare: the fraction of the samples behind Hot in the stack
	// capture of autograd's anomaly detection (traceback.format_stack /
	// extract_stack, which it calls for every op that records a node).
	AnomalyShare float64 `json:"anomaly_share,omitempty"`
	// MHAShare: the fraction of the samples behind Hot inside
	// nn.MultiheadAttention's forward; MHALines the user lines that
	// called it.
	MHAShare float64 `json:"mha_share,omitempty"`
	MHALines []Line  `json:"mha_lines,omitempty"`
	// GIL: another Python thread that ran on a CPU while the main thread
	// sat blocked inside torch (nil: no CPU clocks, or no other thread).
	GIL *GILEvidence `json:"gil,omitempty"`
	// Framework: the training framework whose own code (frameworkLoops)
	// is the innermost frame of the most samples behind Hot ("" : none);
	// FrameworkShare their fraction, FrameworkFuncs its functions with
	// the most of them.
	Framework      string   `json:"framework,omitempty"`
	FrameworkShare float64  `json:"framework_share,omitempty"`
	FrameworkFuncs []string `json:"framework_funcs,omitempty"`
	IOLines        []Line   `json:"io_lines,omitempty"`
	// CompileLines: the user lines that led into torch.compile's
	// compilation (torch/_dynamo/convert_frame.py): the compiled
	// function's call sites.
	CompileLines []Line `json:"compile_lines,omitempty"`
	// RunHot: the user lines with the most main-thread samples over the
	// whole run (imports left out): in a run that slows down, what its
	// later steps do.
	RunHot []Line `json:"run_hot,omitempty"`
	// RunIOShare and RunIOLines: IOShare and IOLines over the whole run
	// (imports left out), where work every N steps shows.
	RunIOShare  float64 `json:"run_io_share,omitempty"`
	RunIOLines  []Line  `json:"run_io_lines,omitempty"`
	LoaderLines []Line  `json:"loader_lines,omitempty"`
	// SlowSamples and SlowLines: the main thread's samples in steps over
	// twice the median of the steps before them (pyprofile's SlowCount,
	// imports left out), and their user lines by share of those: what the
	// slow steps of work every N steps do, whether the window holds one
	// or not.
	SlowSamples int    `json:"slow_samples,omitempty"`
	SlowLines   []Line `json:"slow_lines,omitempty"`
	// SlowLoopLines: the same samples by the training loop's own line that
	// leads to them (stepLoopLines): the evaluation or the save the loop
	// calls every N steps, where SlowLines has the lines deep inside it.
	SlowLoopLines []Line `json:"slow_loop_lines,omitempty"`
	// SlowLoaderShare: of those samples, the share in DataLoader code
	// (waiting for a batch).
	SlowLoaderShare float64 `json:"slow_loader_share,omitempty"`
	// StartupShare and StartupLines: of the main thread's samples before
	// the first step ended (pyprofile's StartupCount), the share in the
	// program's own code (innermost frame outside installed packages;
	// imports left out), and their lines by share of those. Samples, not their
	// count times the interval: a C call that holds the GIL (torch.tensor
	// over 60,000 lists, 0.9 s) delays the sampler, and gets one.
	StartupShare float64 `json:"startup_share,omitempty"`
	StartupLines []Line  `json:"startup_lines,omitempty"`
	// StartupOffCPU: of those samples in the program's own code, the
	// share neither on a CPU nor runnable (each stack weighted as over the
	// whole run; 0 without a CPU clock): a start-up that waits (a
	// download, a sleep, a subprocess) is no Python to vectorise.
	StartupOffCPU float64 `json:"startup_off_cpu,omitempty"`
	// StartupChildShare: of those samples, the share starting or waiting
	// for the program's multiprocessing children (a frame in the standard
	// library's multiprocessing): Hogwild-style training in
	// mp.Process workers while the main process joins them, work no step
	// of this process holds.
	StartupChildShare float64 `json:"startup_child_share,omitempty"`
	// LoaderOffCPU: of the main thread's samples in DataLoader code over
	// the run, the share neither on a CPU nor waiting for one (a Dataset
	// that sleeps or reads); 0 without CPU clocks.
	LoaderOffCPU float64 `json:"loader_off_cpu,omitempty"`
	// OffStepShare: the share of the main thread's samples over the whole
	// run in work that does not belong in the step (offstep.go), and its
	// user lines; OffStepWindowShare the share within the recorded window
	// (-1: no window).
	// BlockedShare: the share of the main thread's samples over the whole
	// run (imports left out) at lines that were off the CPU (sleeping,
	// waiting on a socket, a lock, a subprocess) outside torch; Blocked those lines, In naming the
	// innermost function they waited in ("" : a builtin such as
	// time.sleep at the line itself).
	BlockedShare       float64       `json:"blocked_share,omitempty"`
	Blocked            []Line        `json:"blocked,omitempty"`
	OffStepShare       float64       `json:"off_step_share,omitempty"`
	OffStep            []OffStepLine `json:"off_step,omitempty"`
	OffStepWindowShare float64       `json:"off_step_window_share,omitempty"`
	// ArgCheckShare: the share of the main thread's samples over the
	// whole run (imports left out) in torch.distributions' checks of
	// its arguments and samples (validate.go); ArgChecks the program's
	// lines that led there.
	ArgCheckShare float64 `json:"arg_check_share,omitempty"`
	ArgChecks     []Line  `json:"arg_checks,omitempty"`
}

// AutocastBlock is a `with torch.autocast("cpu", ...)` (or decorator)
// line of the program, with the reduced precision it asks for.
type AutocastBlock struct {
	File  string  `json:"file"`
	Line  int     `json:"line"`
	DType string  `json:"dtype"` // bfloat16 (the CPU default) or float16
	Share float64 `json:"share"`
}

// Line is a Python source line and its share of the main thread's samples.
type Line struct {
	File string  `json:"file"`
	Line int     `json:"line"`
	Func string  `json:"func"`
	Pct  float64 `json:"pct"`
	In   string  `json:"in,omitempty"`
	// Inside: where the line's samples go in the package it calls, when
	// most of them are in one of its functions (nil: the line's own work,
	// torch's, or spread).
	Inside *LibraryCall `json:"inside,omitempty"`
	// Text is the line's source as the agent recorded it (the program's
	// own files; absent from older agents).
	Text string `json:"text,omitempty"`
	// CallsLoader: a loader line whose samples are mostly in a
	// DataLoader it calls (a loop over the loader, a library's fit that
	// makes its own), not the program's dataset code the loader calls.
	CallsLoader bool `json:"calls_loader,omitempty"`
}

// A line is blocked when at least minBlockedSamples of the main thread's
// samples over the run are at it, at least blockedOffCPU of them were off
// the CPU, and its runnable fraction (on a CPU or waiting for one) is at
// most blockedBelowRunnable of the thread's other lines' (when those hold
// minRestSamples). A sample's shares cover the time since the previous
// sample, which can end in the line before, so the fractions come from
// the repeats (samples that followed one at the same stack) when a line
// has minRepeatSamples of them; other samples can carry the line before's
// run-queue wait, hence the margin. Without the run-queue wait (agents
// before it) only the CPU time counts, and a line must be at most
// blockedBelowRest of the others'.
const (
	minBlockedSamples    = 5
	minRepeatSamples     = 3
	blockedOffCPU        = 0.8
	blockedBelowRunnable = 0.5
	blockedBelowRest     = 0.25
	minRestSamples       = 10
)

func matchAny(file string, pats []string) bool {
	f := strings.ReplaceAll(file, "\\", "/")
	for _, p := range pats {
		if strings.Contains(f, p) {
			return true
		}
	}
	return false
}

// FromProfile classifies the main thread's samples of a sampled Python
// profile: I/O, DataLoader, and the rest by user line, over the recorded
// window when there is one. It returns nil for cProfile output (no
// stacks) or an empty profile.
func FromProfile(p *pyprofile.Profile) *PythonEvidence {
	if p == nil {
		return nil
	}
	return fromProfile(p, p.WindowSamples > 0, false, "")
}

// inModel reports whether a frame belongs to the model's forward, the
// backward or the optimizer (modelFiles; Tensor.backward lives in
// torch/_tensor.py beside the tensor's other methods).
func inModel(f pyprofile.Frame) bool {
	return matchAny(f.File, modelFiles) || f.Func == "backward" && strings.HasSuffix(f.File, "/torch/_tensor.py")
}

// transformName names a data transform by its frame, the outermost of
// its library's on the stack: "Resample (torchaudio.transforms)" for
// Resample.forward in .../torchaudio/transforms/_transforms.py.
func transformName(f pyprofile.Frame) string {
	class, _, _ := strings.Cut(f.Func, ".")
	for _, lib := range dataTransformFiles {
		if i := strings.Index(f.File, lib); i >= 0 {
			return class + " (" + strings.ReplaceAll(strings.Trim(lib, "/"), "/", ".") + ")"
		}
	}
	return class
}

// modelCompute matches a program line that multiplies or convolves
// tensors itself: a model written without nn.Module (x @ w), or features
// computed by matmuls, whose change is the matmul family's, not the
// program's own preprocessing.
var modelCompute = regexp.MustCompile(`@|\b(matmul|mm|bmm|addmm|baddbmm|linear|conv[123]d|conv_transpose[123]d|einsum)\s*\(`)

// FromWholeRun is FromProfile over the whole run's samples, window or not.
func FromWholeRun(p *pyprofile.Profile) *PythonEvidence { return fromProfile(p, false, false, "") }

// fromProfile classifies p's samples; trains says the run is known to
// train (optimizer steps counted) whether or not a sample caught it; root
// is the run directory, whose copy of the program's source is read first.
func fromProfile(p *pyprofile.Profile, window, trains bool, root string) *PythonEvidence {
	if p == nil || p.Profiler != "sample" || len(p.Stacks) == 0 {
		return nil
	}
	type key = lineKey
	var total, io, ioRead, dl, dlIO, dlPandas, hotN, module, anomaly, mha int
	framework, frameworkFuncs := map[string]int{}, map[string]int{}
	hot, ioL, dlL, compileL, outside, mhaL := map[key]int{}, map[key]int{}, map[key]int{}, map[key]int{}, map[key]int{}, map[key]int{}
	dlOuter := map[key]int{} // the loader samples of each line whose DataLoader frames are below it
	texts := map[key]string{}
	src := newSourceCache(root)
	autocast := map[AutocastBlock]int{} // blocks (Share 0) -> samples
	funcs := map[key]string{}
	// per hot line over the whole run (imports left out: blocking is told
	// from many samples, the window's are few): samples, on-CPU samples,
	// and samples whose innermost frame is outside torch (a builtin such
	// as time.sleep, socket, threading)
	runTotal, runIO := 0, 0
	runIOL, slowL, startL := map[key]int{}, map[key]int{}, map[key]int{}
	slowN, slowDL, startN, startAll := 0, 0, 0, 0
	startOff, startChild := 0.0, 0
	loaderN, loaderOff := 0, 0.0 // DataLoader samples over the run, and those off the CPU
	run := map[key]*lineSamples{}
	waitKnown := false // the agent recorded the main thread's run-queue wait
	blockedIn := map[key]string{}
	under := map[key][]lineStack{} // the stacks under each line, for Line.Inside
	var ownStacks []programStack   // the outside samples' program frames, for OutsideFunc
	transforms := map[string]int{} // the outside samples in each data transform (OutsideTransform)
	for si := range p.Stacks {
		st := &p.Stacks[si]
		if p.Threads[st.Thread].Role != "main" || len(st.Frames) == 0 {
			continue
		}
		c := st.Count
		if window {
			c = st.WindowCount
		}
		importing := p.Importing(st.Frames)
		if !importing {
			runTotal += st.Count
		}
		if c == 0 && (importing || st.Count == 0) {
			continue
		}
		total += c
		isIO, isDL, compiling, inPandas := false, false, false, false
		for _, fi := range st.Frames {
			f := p.Frames[fi].File
			isIO = isIO || matchAny(f, ioFiles)
			isDL = isDL || matchAny(f, loaderFiles)
			compiling = compiling || isCompiling(p.Frames[fi])
			inPandas = inPandas || pyprofile.IsPandas(f)
		}
		// the innermost user frame: the program's line that led here
		leafAt := len(st.Frames) - 1
		for i := len(st.Frames) - 1; i >= 0; i-- {
			if !pyprofile.IsLibraryFile(p.Frames[st.Frames[i]].File) {
				leafAt = i
				break
			}
		}
		fr := p.Frames[st.Frames[leafAt]]
		k := key{fr.File, fr.Line}
		under[k] = append(under[k], lineStack{st, leafAt})
		funcs[k] = fr.Func
		if fr.Text != "" {
			texts[k] = fr.Text
		}
		if compiling && c > 0 {
			compileL[k] += c
		}
		startAll += st.StartupCount
		if !importing {
			slowL[k] += st.SlowCount
			slowN += st.SlowCount
			if isDL {
				slowDL += st.SlowCount
			}
			if ownWork(p, st.Frames) {
				startL[k] += st.StartupCount
				startN += st.StartupCount
				if slices.ContainsFunc(st.Frames, func(fi int) bool { return matchAny(p.Frames[fi].File, childProcessFiles) }) {
					startChild += st.StartupCount
				}
				if st.Count > 0 && p.CPUClock {
					startOff += float64(st.StartupCount) * max(0, 1-(st.CPUCount+st.WaitCount)/float64(st.Count))
				}
			}
		}
		switch {
		case isDL: // a Dataset that reads files is input work, not checkpointing or logging
			dl += c
			dlL[k] += c
			if !slices.ContainsFunc(st.Frames[:leafAt], func(fi int) bool { return matchAny(p.Frames[fi].File, loaderFiles) }) {
				dlOuter[k] += c // the loader runs below the line
			}
			if !importing && p.CPUClock {
				loaderN += st.Count
				loaderOff += max(0, float64(st.Count)-st.CPUCount-st.WaitCount)
			}
			if isIO {
				dlIO += c
			}
			if inPandas {
				dlPandas += c
			}
		case isIO:
			io += c
			ioL[k] += c
			if readsFile(p, st.Frames) {
				ioRead += c
			}
			if !importing {
				runIO += st.Count
				runIOL[k] += st.Count
			}
		default:
			if c > 0 {
				hot[k] += c
				hotN += c
				if slices.ContainsFunc(st.Frames, func(fi int) bool { return matchAny(p.Frames[fi].File, []string{"/torch/nn/modules/"}) }) {
					module += c
				}
				// a metric library's ops are host.off-step's, not the
				// program's own tensor code (an AUROC per step was told to
				// "write it over whole tensors")
				tf := slices.IndexFunc(st.Frames, func(fi int) bool { return matchAny(p.Frames[fi].File, dataTransformFiles) })
				if (tf >= 0 || !slices.ContainsFunc(st.Frames, func(fi int) bool { return inModel(p.Frames[fi]) || matchAny(p.Frames[fi].File, offStepLibs) })) && !modelCompute.MatchString(fr.Text) {
					outside[k] += c
					ownStacks = append(ownStacks, programStack{programFrames(p, st), c})
					if tf >= 0 {
						transforms[transformName(p.Frames[st.Frames[tf]])] += c
					}
				}
				if slices.ContainsFunc(st.Frames, func(fi int) bool { return isStackCapture(p.Frames[fi]) }) {
					anomaly += c
				}
				if slices.ContainsFunc(st.Frames, func(fi int) bool { return isMultiheadAttention(p.Frames[fi]) }) {
					mha += c
					mhaL[k] += c
				}
				inner := p.Frames[st.Frames[len(st.Frames)-1]]
				if fw := frameworkOf(inner.File); fw != "" {
					framework[fw] += c
					frameworkFuncs[inner.Func] += c
				}
				if b, ok := cpuAutocast(p, st.Frames, src); ok {
					autocast[b] += c
				}
			}
			if importing || compiling { // start-up: its waits (the C++ compiler's subprocess) are not the step's
				break
			}
			l := run[k]
			if l == nil {
				l = &lineSamples{}
				run[k] = l
			}
			l.add(*st)
			waitKnown = waitKnown || st.WaitCount > 0
			if inner := p.Frames[st.Frames[len(st.Frames)-1]]; !matchAny(inner.File, []string{"/torch/"}) {
				l.outside += st.Count
				if inner != fr {
					blockedIn[k] = inner.Func
				}
			}
		}
	}
	if total == 0 {
		return nil
	}
	topLines := func(m map[key]int, total int) []Line {
		var out []Line
		for k, c := range m {
			if c == 0 || pyprofile.IsLibraryFile(k.file) {
				continue
			}
			out = append(out, Line{File: k.file, Line: k.line, Func: funcs[k], Pct: stats.Round1(100 * float64(c) / float64(total)), Text: texts[k]})
		}
		slices.SortFunc(out, func(a, b Line) int {
			if a.Pct != b.Pct {
				return cmp.Compare(b.Pct, a.Pct)
			}
			return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
		})
		if len(out) > 5 {
			out = out[:5]
		}
		return out
	}
	lines := func(m map[key]int) []Line { return topLines(m, total) }
	// Blocked lines: off the CPU in most of their samples, outside torch
	// (torch ops run on a CPU or wait for the device, which the trace
	// shows), and far less runnable than the thread's other lines: on a
	// busy machine every line loses CPU time, but a line that computes
	// stays runnable (waiting for a CPU). Agents without the run-queue
	// wait count only the CPU time as runnable.
	blocked, waits := map[key]int{}, 0
	if p.CPUClock {
		below := blockedBelowRest
		if waitKnown {
			below = blockedBelowRunnable
		}
		ref := runnableRef(run, p.Repeats)
		for k, l := range run {
			if _, runnable := l.shares(p.Repeats); l.candidate(p.Repeats) && runnable <= below*ref {
				blocked[k] = l.n
				waits += l.n
			}
		}
	}
	slowLoopL, loopFrames := stepLoopFrames(p, func(st *pyprofile.Stack) int { return st.SlowCount })
	for k := range slowLoopL {
		funcs[k] = loopFrames[k].Func
		if t := loopFrames[k].Text; t != "" {
			texts[k] = t
		}
	}
	runHot := map[key]int{}
	for k, l := range run {
		runHot[k] = l.n
	}
	for k := range blocked { // waits, not work: the Hot lines are where the CPU time goes
		delete(hot, k)
	}
	ev := &PythonEvidence{Profiler: p.Profiler, Window: window, Samples: total,
		IOShare: float64(io) / float64(total), LoaderShare: float64(dl) / float64(total),
		Hot: lines(hot), IOLines: lines(ioL), LoaderLines: lines(dlL), CompileLines: lines(compileL),
		Blocked: topLines(blocked, max(runTotal, 1)), RunHot: topLines(runHot, max(runTotal, 1)),
		SlowSamples: slowN, SlowLines: topLines(slowL, max(slowN, 1)), SlowLoopLines: topLines(slowLoopL, max(slowN, 1)),
		StartupLines: topLines(startL, max(startN, 1))}
	inside := func(lines []Line, count func(*pyprofile.Stack) int) {
		for i, l := range lines {
			lines[i].Inside = insideOf(p, under[key{l.File, l.Line}], count)
		}
	}
	inside(ev.Hot, func(st *pyprofile.Stack) int {
		if window {
			return st.WindowCount
		}
		return st.Count
	})
	inside(ev.RunHot, func(st *pyprofile.Stack) int { return st.Count })
	for i, l := range ev.LoaderLines {
		k := key{l.File, l.Line}
		ev.LoaderLines[i].CallsLoader = 2*dlOuter[k] > dlL[k]
	}
	// the loading under a program's call into a library that makes its
	// own DataLoader (pytorch-tabnet's fit: its TorchDataset), not the
	// library's training under the same line
	inside(ev.LoaderLines, func(st *pyprofile.Stack) int {
		if !slices.ContainsFunc(st.Frames, func(fi int) bool { return matchAny(p.Frames[fi].File, loaderFiles) }) {
			return 0
		}
		if window {
			return st.WindowCount
		}
		return st.Count
	})
	inside(ev.SlowLines, func(st *pyprofile.Stack) int { return st.SlowCount })
	inside(ev.StartupLines, func(st *pyprofile.Stack) int { return st.StartupCount })
	if startAll += p.ImportPausedSamples; startAll > 0 { // torch's import: before the steps, unsampled
		ev.StartupShare = float64(startN) / float64(startAll)
	}
	if loaderN > 0 {
		ev.LoaderOffCPU = loaderOff / float64(loaderN)
	}
	if startN > 0 {
		ev.StartupOffCPU = startOff / float64(startN)
		ev.StartupChildShare = float64(startChild) / float64(startN)
	}
	if slowN > 0 {
		ev.SlowLoaderShare = float64(slowDL) / float64(slowN)
	}
	if dl > 0 {
		ev.LoaderIOShare = float64(dlIO) / float64(dl)
		ev.LoaderDataFrameRows = 2*dlPandas >= dl || len(ev.LoaderLines) > 0 && src.readsDataFrameRows(ev.LoaderLines[0].File, ev.LoaderLines[0].Line)
	}
	if io > 0 {
		ev.IOReadShare = float64(ioRead) / float64(io)
	}
	ev.GIL = gilEvidence(p)
	if runTotal > 0 {
		ev.BlockedShare = float64(waits) / float64(runTotal)
		ev.RunIOShare, ev.RunIOLines = float64(runIO)/float64(runTotal), topLines(runIOL, runTotal)
	}
	if hotN > 0 {
		ev.HotSamples = hotN
		ev.ModuleShare = float64(module) / float64(hotN)
		n := 0
		for _, c := range outside {
			n += c
		}
		ev.OutsideModelShare, ev.OutsideModel = float64(n)/float64(hotN), lines(outside)
		for name, c := range transforms {
			if 2*c >= n && (ev.OutsideTransform == "" || name < ev.OutsideTransform) {
				ev.OutsideTransform = name
			}
		}
		ev.OutsideFunc, ev.OutsideFuncCaller = ownFunc(ownStacks, hotN)
		ev.AnomalyShare = float64(anomaly) / float64(hotN)
		ev.MHAShare, ev.MHALines = float64(mha)/float64(hotN), lines(mhaL)
		for name, n := range framework {
			if share := float64(n) / float64(hotN); share > ev.FrameworkShare || share == ev.FrameworkShare && name < ev.Framework {
				ev.Framework, ev.FrameworkShare = name, share
			}
		}
		ev.FrameworkFuncs = topKeys(frameworkFuncs, 3)
		best := 0
		for b, n := range autocast {
			if n > best || n == best && (b.File < ev.CPUAutocast.File || b.File == ev.CPUAutocast.File && b.Line < ev.CPUAutocast.Line) {
				b.Share = float64(n) / float64(hotN)
				best, ev.CPUAutocast = n, &b
			}
		}
	}
	for i, l := range ev.Blocked {
		ev.Blocked[i].In = blockedIn[key{l.File, l.Line}]
	}
	ev.OffStepShare, ev.OffStep, ev.OffStepWindowShare = offStep(p, src, trains)
	ev.ArgCheckShare, ev.ArgChecks = argChecks(p)
	return ev
}

// frameworkLoops are the files of the training frameworks' own loops
// (not the models they ship: transformers/models is a model's forward),
// by the name the change gives them.
var frameworkLoops = []struct{ name, file string }{
	{"Lightning", "/lightning/"}, {"Lightning", "/pytorch_lightning/"},
	{"the Hugging Face Trainer", "/transformers/trainer"}, {"Accelerate", "/accelerate/"},
}

// frameworkOf is the framework whose loop file is file ("" : none).
func frameworkOf(file string) string {
	for _, f := range frameworkLoops {
		if matchAny(file, []string{f.file}) {
			return f.name
		}
	}
	return ""
}

// topKeys are the n keys with the largest counts, ties by key.
func topKeys(m map[string]int, n int) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	return keys[:min(n, len(keys))]
}

// GILEvidence: the program's other Python thread with the most CPU time
// over the whole run, and the main thread's time blocked inside torch.
// Python runs one thread at a time: a thread busy in Python holds the GIL
// and the main thread waits for it between ops, off the CPU, at lines in
// torch that otherwise compute or wait for a CPU.
type GILEvidence struct {
	// Thread is the other thread's name, CPUShare its on-CPU samples per
	// main-thread sample, imports and compilation left out as below (the
	// share of the run it ran on a CPU; against all the main thread's
	// samples one run measured 34% where others measured 86-90%), Lines the
	// program's lines it ran most.
	Thread   string  `json:"thread"`
	CPUShare float64 `json:"cpu_share"`
	Lines    []Line  `json:"lines,omitempty"`
	// MainBlocked: the share of the main thread's samples (imports and
	// compilation left out) inside torch and neither on a CPU nor waiting
	// for one; MainOffCPU: inside torch and off the CPU, blocked or
	// waiting for a CPU (which the other thread takes too).
	MainBlocked float64 `json:"main_blocked"`
	MainOffCPU  float64 `json:"main_off_cpu"`
}

// gilEvidence reads GILEvidence from a profile with CPU clocks. A thread's
// samples count as Python on a CPU unless their innermost frame is in
// torch or is a program line calling torch or multiplying tensors: torch's
// ops release the GIL (a thread running matmuls beside training does not
// block it).
func gilEvidence(p *pyprofile.Profile) *GILEvidence {
	if !p.CPUClock {
		return nil
	}
	mainT := slices.IndexFunc(p.Threads, func(t pyprofile.Thread) bool { return t.Role == "main" })
	if mainT < 0 || p.Threads[mainT].Samples == 0 {
		return nil
	}
	type threadLines struct {
		python float64
		n      int
		lines  map[lineKey]int
	}
	others := map[int]*threadLines{}
	funcs, texts := map[lineKey]string{}, map[lineKey]string{}
	var mainN, blocked, off float64
	for _, st := range p.Stacks {
		if len(st.Frames) == 0 || p.Importing(st.Frames) || slices.ContainsFunc(st.Frames, func(fi int) bool { return isCompiling(p.Frames[fi]) }) {
			continue
		}
		inner := p.Frames[st.Frames[len(st.Frames)-1]]
		if st.Thread == mainT {
			mainN += float64(st.Count)
			if matchAny(inner.File, []string{"/torch/"}) {
				blocked += max(0, float64(st.Count)-st.CPUCount-st.WaitCount)
				off += max(0, float64(st.Count)-st.CPUCount)
			}
			continue
		}
		if p.Threads[st.Thread].Role != "other" {
			continue
		}
		t := others[st.Thread]
		if t == nil {
			t = &threadLines{lines: map[lineKey]int{}}
			others[st.Thread] = t
		}
		if !matchAny(inner.File, []string{"/torch/"}) && (pyprofile.IsLibraryFile(inner.File) || !callsTorch.MatchString(inner.Text)) {
			t.python += st.CPUCount
		}
		t.n += st.Count
		for i := len(st.Frames) - 1; i >= 0; i-- {
			if f := p.Frames[st.Frames[i]]; !pyprofile.IsLibraryFile(f.File) {
				k := lineKey{f.File, f.Line}
				t.lines[k] += st.Count
				funcs[k], texts[k] = f.Func, f.Text
				break
			}
		}
	}
	other := -1
	for i, t := range others {
		if other < 0 || t.python > others[other].python || t.python == others[other].python && i < other {
			other = i
		}
	}
	if mainN == 0 || other < 0 {
		return nil
	}
	t := others[other]
	g := &GILEvidence{Thread: p.Threads[other].Name, CPUShare: t.python / mainN, MainBlocked: blocked / mainN, MainOffCPU: off / mainN}
	for k, c := range t.lines {
		g.Lines = append(g.Lines, Line{File: k.file, Line: k.line, Func: funcs[k], Text: texts[k], Pct: stats.Round1(100 * float64(c) / float64(max(t.n, 1)))})
	}
	slices.SortFunc(g.Lines, func(a, b Line) int {
		return cmp.Or(cmp.Compare(b.Pct, a.Pct), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	g.Lines = g.Lines[:min(3, len(g.Lines))]
	return g
}

// callsTorch matches a program line that calls torch or multiplies
// tensors: its time is in torch's ops, which release the GIL.
var callsTorch = regexp.MustCompile(`\btorch\.|@|\.(matmul|mm|bmm|backward|step)\(`)

// compileFiles and compileFuncs mark torch.compile's compilation:
// dynamo's frame conversion, C++/Triton builds, and the functions that
// compile a graph (AOT autograd compiles the backward lazily, at the first
// backward, with no dynamo frame on the stack). Not whole Inductor files:
// torch 2.1-2.4 run the compiled graph through codecache.py.
var (
	compileFiles = []string{"/torch/_dynamo/convert_frame.py", "/torch/_inductor/cpp_builder.py", "/torch/_inductor/async_compile.py"}
	compileFuncs = []string{"compile_fx_inner", "fx_codegen_and_compile", "get_or_compile", "load_async"}
)

func isCompiling(f pyprofile.Frame) bool {
	if matchAny(f.File, compileFiles) {
		return true
	}
	fn := f.Func[strings.LastIndexByte(f.Func, '.')+1:]
	return strings.Contains(f.File, "/torch/_") && slices.Contains(compileFuncs, fn)
}

// isMultiheadAttention reports whether a frame runs nn.MultiheadAttention's
// forward (Python before 3.11 names the method "forward" alone: the
// functional path's multi_head_attention_forward still tells it).
func isMultiheadAttention(f pyprofile.Frame) bool {
	return strings.HasSuffix(f.File, "/torch/nn/modules/activation.py") && f.Func == "MultiheadAttention.forward" ||
		strings.HasSuffix(f.File, "/torch/nn/functional.py") && f.Func == "multi_head_attention_forward"
}

// isStackCapture: a frame of Python's traceback module capturing the
// stack (torch.fx.traceback.format_stack calls it), which anomaly
// detection does for every op that records an autograd node.
func isStackCapture(f pyprofile.Frame) bool {
	return strings.HasSuffix(f.File, "/traceback.py") && (f.Func == "format_stack" || f.Func == "extract_stack" || strings.HasPrefix(f.Func, "StackSummary."))
}

// isFloat64 reports whether a dtype as Python prints it is float64.
func isFloat64(dtype string) bool { return dtype == "torch.float64" || dtype == "torch.double" }

type lineKey struct {
	file string
	line int
}

// lineSamples are the main thread's samples at one program line over the
// run (imports left out): all of them and the repeats (see
// pyprofile.Stack.RepeatCount), each with its on-CPU and runnable (on a
// CPU or waiting for one) weights, and how many had their innermost frame
// outside torch.
type lineSamples struct {
	n, outside, rep     int
	cpu, runnable       float64
	repCPU, repRunnable float64
}

func (l *lineSamples) add(st pyprofile.Stack) {
	l.n += st.Count
	l.cpu += st.CPUCount
	l.runnable += st.CPUCount + st.WaitCount
	l.rep += st.RepeatCount
	l.repCPU += st.RepeatCPUCount
	l.repRunnable += st.RepeatCPUCount + st.RepeatWaitCount
}

// shares are the line's on-CPU and runnable fractions: its repeats' when
// it has minRepeatSamples of them, else all its samples'.
func (l *lineSamples) shares(repeats bool) (cpu, runnable float64) {
	if repeats && l.rep >= minRepeatSamples {
		return l.repCPU / float64(l.rep), l.repRunnable / float64(l.rep)
	}
	return l.cpu / float64(max(l.n, 1)), l.runnable / float64(max(l.n, 1))
}

// candidate: enough samples, mostly outside torch and off the CPU.
func (l *lineSamples) candidate(repeats bool) bool {
	cpu, _ := l.shares(repeats)
	return l.n >= minBlockedSamples && l.outside >= l.n*4/5 && cpu <= 1-blockedOffCPU
}

// runnableRef is the runnable fraction of the main thread's lines that
// are not blocked candidates, from their repeats when the profile has
// them (a short line's other samples mostly measure the blocked line it
// followed), 1 with fewer than minRestSamples.
func runnableRef(run map[lineKey]*lineSamples, repeats bool) float64 {
	var n int
	var runnable float64
	for _, l := range run {
		switch {
		case l.candidate(repeats):
		case repeats:
			n += l.rep
			runnable += l.repRunnable
		default:
			n += l.n
			runnable += l.runnable
		}
	}
	if n < minRestSamples {
		return 1
	}
	return runnable / float64(n)
}

// cpuAutocast finds the innermost program line of a stack that runs in
// an autocast block on the CPU, and that block.
func cpuAutocast(p *pyprofile.Profile, frames []int, src sourceCache) (AutocastBlock, bool) {
	for i := len(frames) - 1; i >= 0; i-- {
		fr := p.Frames[frames[i]]
		if pyprofile.IsLibraryFile(fr.File) {
			continue
		}
		if b := src.enclosing(fr.File, fr.Line, &cpuAutocastBlock); b.Line > 0 {
			dtype := "bfloat16"
			if strings.Contains(b.Text, "float16") && !strings.Contains(b.Text, "bfloat16") {
				dtype = "float16"
			}
			return AutocastBlock{File: fr.File, Line: b.Line, DType: dtype}, true
		}
	}
	return AutocastBlock{}, false
}

// CutWindow is a window whose recording ended inside a step, or at the
// end of its last step (a bound checked at a step's end).
type CutWindow struct {
	// Why says what ended it (window.Options.LastStepCut).
	Why string `json:"why"`
	// Steps is how many steps the window recorded whole: a trace that
	// holds more has its last one cut short.
	Steps int `json:"steps"`
	// InStep: a memory or time bound closed the window inside a step of
	// the program, so the part recorded is that step's start (the idle
	// bound closes it after the steps stopped, the program's end after
	// the last one).
	InStep bool `json:"in_step,omitempty"`
	// By names the bound that closed it inside the step: "memory" or
	// "wall" (with InStep; empty otherwise).
	By string `json:"by,omitempty"`
}

// batchesAhead is how many batches the loaders' workers load ahead of
// the step: num_workers x prefetch_factor (2 when not known), summed.
func (r *RunEvidence) BatchesAhead() int {
	n := 0
	for _, l := range r.Loaders {
		if l.NumWorkers != nil && *l.NumWorkers > 0 {
			ahead := 2 // torch's default prefetch_factor
			if l.PrefetchFactor != nil && *l.PrefetchFactor > 0 {
				ahead = *l.PrefetchFactor
			}
			n += *l.NumWorkers * ahead
		}
	}
	return n
}

// FromProcess builds the evidence of one process of a run directory.
func FromProcess(pr *rundir.ProcessFiles) *RunEvidence {
	r := &RunEvidence{Tag: pr.Tag}
	r.Rank, _ = rundir.Rank(pr.Tag)
	var outliers map[int]bool // the window's outlier steps
	if ev := pr.Evidence; ev != nil {
		for _, w := range ev.Profiler.Windows {
			why := ""
			switch {
			case w.Partial:
				why = "the program ended during it"
			case w.ClosedBy != "":
				why = fmt.Sprintf("the window's %s bound closed it: %s", w.ClosedBy, w.ClosedDetail)
			default:
				continue
			}
			if r.CutTraces == nil {
				r.CutTraces = map[string]CutWindow{}
			}
			c := CutWindow{Why: why, Steps: len(w.Steps)}
			if w.ClosedBy == "memory" || w.ClosedBy == "wall" {
				c.InStep, c.By = true, w.ClosedBy
			}
			r.CutTraces[filepath.Base(w.File)] = c
		}
		steps := ev.StepSeries()
		r.OutsideStepS, r.WindowMedianS = stepMedians(steps)
		r.OutsideWorkS, r.WindowWorkS = stepMedians(lessLoaderWaits(steps))
		// the window's steps as the trace's analyses take them: without
		// those over twice its median (an evaluation at an epoch's end
		// made the DataLoader wait per step 1.05 ms, the trace's 361 µs)
		// (steps whose excess is mostly DataLoader wait stay when there
		// are two or more, as the window check keeps them)
		long := func(d float64) bool { return r.WindowMedianS > 0 && d > 2*r.WindowMedianS }
		waits := 0
		for _, w := range ev.WindowSteps {
			if long(w.DurationS) && 2*w.DataLoaderWaitS >= w.DurationS-r.WindowMedianS {
				waits++
			}
		}
		var sum, wait, allSum, allWait float64
		var syncs, n int
		for _, w := range ev.WindowSteps {
			allSum, allWait = allSum+w.DurationS, allWait+w.DataLoaderWaitS
			if long(w.DurationS) && (waits < 2 || 2*w.DataLoaderWaitS < w.DurationS-r.WindowMedianS) {
				continue
			}
			sum += w.DurationS
			wait += w.DataLoaderWaitS
			syncs += w.Syncs
			n++
		}
		if allSum > 0 {
			r.WindowLoaderWaitShare = allWait / allSum
		}
		if n > 0 {
			r.WindowStepS = sum / float64(n)
			r.DataLoaderWaitS = wait / float64(n)
			r.SyncsPerStep = float64(syncs) / float64(n)
		}
		if ev.StepSource != nil {
			r.StepSource = *ev.StepSource
		}
		r.SettledStep = FirstSettledStep(steps)
		firstRecorded := 0
		if len(ev.WindowSteps) > 0 {
			firstRecorded = ev.WindowSteps[0].Step
		}
		r.Slowing, r.BusierMachine, r.MoreItems = RunGrowth(steps, firstRecorded)
		r.InputGrowth = GrowthOfInputs(ev.StepInputs)
		r.StepCalls, r.StepCallsMedian = ev.StepCalls, medianCalls(steps)
		r.OneSample = OneSampleInputs(ev.StepInputs)
		var rows []rundir.StepRow
		if ev.PerStep != nil {
			rows = ev.PerStep.Rows()
		}
		r.Periodic = Periodic(steps, rows)
		outliers = OutlierSteps(steps, r.WindowMedianS, r.Periodic)
		r.WindowOutlierShare = OutlierShare(steps, r.WindowMedianS, outliers)
		r.NotOwnS = notOwn(steps, rows)
		r.StepsS = ev.StepStats.SumS
		r.StoppedAfterProfile, _ = ev.Exit["stopped_after_profile"].(bool)
		if len(steps) > 0 {
			r.FirstStepS = steps[0].StartS
		}
		r.RunMedianStepS = runMedian(steps)
		r.OneOff = oneOff(steps, r.RunMedianStepS, r.Periodic, ev.EndUnix-ev.StartUnix)
		r.HasDataLoader = ev.DataLoader.Batches > 0 || len(ev.DataLoader.Loaders) > 0
		for _, l := range ev.DataLoader.Loaders {
			excess, timed := restartSteps(steps, l, r.RunMedianStepS, r.StepSource)
			r.Loaders = append(r.Loaders, Loader{Dataset: l.Dataset, Iterable: l.Iterable, NumWorkers: l.NumWorkers, PinMemory: l.PinMemory, PrefetchFactor: l.PrefetchFactor,
				PersistentWorkers: l.PersistentWorkers, BatchSize: l.BatchSize, Batches: l.Batches, WaitS: l.WaitS,
				Iterators: l.Iterators, Loaders: l.Loaders, RestartS: l.RestartS, FirstWaitS: l.FirstWaitS, StopS: l.StopS,
				RestartStepsS: excess, RestartsTimed: timed, BatchBytes: l.BatchBytes, Site: l.Site,
				MemoryShape: l.MemoryShape, Transforms: l.Transforms, TargetTransform: l.TargetTransform})
		}
		var loaderWait, firstWait float64
		for _, l := range r.Loaders {
			loaderWait, firstWait = loaderWait+l.WaitS, firstWait+l.FirstWaitS
		}
		if r.StepsS > 0 && loaderWait > firstWait {
			r.RunLoaderWaitShare = min(1, (loaderWait-firstWait)/r.StepsS)
		}
		if ev.PerStep != nil {
			rows := ev.PerStep.Rows()
			r.Memory = memoryTrend(rows, ev.PerStep.Growth)
			for _, row := range rows {
				r.PeakRSS = max(r.PeakRSS, row.RSS)
			}
			r.GC = gcPauses(rows, steps, ev.PerStep.GC.Sites)
			for i, c := range ev.PerStep.ThreadCalls {
				switch c.Call {
				case "set_num_threads":
					r.SetThreads = &ev.PerStep.ThreadCalls[i]
				case "set_num_interop_threads":
					r.SetInteropThreads = &ev.PerStep.ThreadCalls[i]
				}
			}
			for i, c := range ev.PerStep.SettingCalls {
				switch {
				case c.Call == "set_default_dtype":
					r.DefaultDtype = nil
					if isFloat64(c.Arg) {
						r.DefaultDtype = &ev.PerStep.SettingCalls[i]
					}
				case c.Call == "set_anomaly_enabled" && c.Arg == "True":
					r.Anomaly = &ev.PerStep.SettingCalls[i]
				}
			}
		}
		r.Optimizers = ev.Optimizers
		r.Models = ev.Models
		r.Options = ev.ProgramOptions
		r.CPUWait = ev.CPUWait
		r.Children = ev.Children
		r.Phases = ev.FrameworkPhases
		r.SyncState = ev.Syncs.State
		for _, s := range ev.Syncs.Sites {
			r.SyncSites = append(r.SyncSites, SyncSite{File: s.File, Line: s.Line, Func: s.Func, Count: s.Count})
		}
	}
	if e := pr.Env; e != nil {
		env := &Env{CPUs: e.CPUs(), LocalRanks: 1, LoadAverage: -1}
		if q := e.CPUQuota; q != nil && *q < float64(e.RunsOn()) {
			env.CPUQuota = *q
		}
		if n, err := strconv.Atoi(e.EnvVars["LOCAL_WORLD_SIZE"]); err == nil && n > 0 {
			env.LocalRanks = n
		}
		for _, k := range ThreadEnvVars {
			if v, ok := e.EnvVars[k]; ok {
				if r.ThreadEnv == nil {
					r.ThreadEnv = map[string]string{}
				}
				r.ThreadEnv[k] = v
			}
		}
		if e.LoadAverage != nil {
			env.LoadAverage = *e.LoadAverage
		}
		env.CPUFeatures = e.CPUFeatures
		env.Glibc, env.Allocator = strings.Contains(e.Platform, "-with-glibc"), allocatorSettings(e.EnvVars)
		env.OpenMPWait = settings(e.EnvVars, func(k, _ string) bool { return k == "OMP_WAIT_POLICY" || k == "GOMP_SPINCOUNT" || k == "KMP_BLOCKTIME" })
		env.MemoryBytes = e.MemoryBytes
		if t := e.Torch; t != nil {
			env.Torch, env.Build, env.NumThreads, env.Flags = t.Version, t.Build, t.NumThreads, t.Flags
			if t.CUDA != nil {
				env.CUDA = *t.CUDA
			}
			for _, d := range t.Devices {
				env.Devices = append(env.Devices, EnvDevice{Name: d.Name, Capability: d.Capability})
			}
		}
		r.Env = env
	}
	// a run that steps an optimizer trains, though its samples may miss
	// the backward and the update (an evaluation of 10 batches after
	// each step of one: 27 samples over the run, none of them in
	// training once in a few CI runs, and the evaluation was taken for
	// the steps of an inference program)
	if p := pr.Profile; p != nil {
		exact := p.WindowSamples > 0 && p.HasWindowSteps()
		if exact {
			p = p.LeavingWindowSteps(outliers)
		}
		r.Python = fromProfile(p, p.WindowSamples > 0, pr.Evidence != nil && pr.Evidence.StepCounts["optimizer"] > 0, pr.Dir)
		if r.Python != nil {
			r.Python.OutliersLeftOut = exact
		}
	}
	r.Workers = pr.Workers.Summary(5)
	if w := r.Workers; w != nil {
		r.WorkersReadDataFrameRows = w.PandasShare >= 0.5 || len(w.Lines) > 0 && newSourceCache(pr.Dir).readsDataFrameRows(w.Lines[0].File, w.Lines[0].Line)
	}
	return r
}

// allocatorSettings names the environment's variables that set the C
// library's allocator (glibc's MALLOC_* and GLIBC_TUNABLES' glibc.malloc
// ones) or preload another one (jemalloc, tcmalloc, mimalloc), in order;
// "" for none.
func allocatorSettings(vars map[string]string) string {
	return settings(vars, func(k, v string) bool {
		return strings.HasPrefix(k, "MALLOC_") || k == "GLIBC_TUNABLES" && strings.Contains(v, "glibc.malloc.") ||
			k == "LD_PRELOAD" && strings.Contains(v, "malloc")
	})
}

// settings are the variables of vars that keep says are of one setting,
// as sorted NAME=VALUE words.
func settings(vars map[string]string, keep func(k, v string) bool) string {
	var out []string
	for k, v := range vars {
		if keep(k, v) {
			out = append(out, k+"="+v)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// stepMedians returns the median duration of the steps outside the
// profiler window and of the steps inside it (0 for fewer than 3 steps).
// Outside is the larger of the medians before the window (after the
// first warmupSteps, start-up) and the steps next to it after it
// (neighbourSteps): programs speed up or slow down over a run, and only a
// window slower than both is inflated by the profiler.
func stepMedians(steps []steptimes.Step) (outside, inside float64) {
	const warmupSteps = 3
	var early, before, in, after []float64
	for _, st := range steps {
		switch {
		case st.DurS <= 0:
		case st.InWindow:
			in = append(in, st.DurS)
		case len(in) > 0:
			// the steps next to the window, not the rest of the run: a run
			// drifts (a Hugging Face Trainer's GPT-2 on an H200: 26-27 ms
			// steps around the window, 30 ms from step 40 on)
			if len(after) < max(neighbourSteps, 2*len(in)) {
				after = append(after, st.DurS)
			}
		case st.N > warmupSteps:
			before = append(before, st.DurS)
		case st.N > 1:
			early = append(early, st.DurS)
		}
	}
	outside = max(median(before), median(after))
	if outside == 0 && len(in) > 0 && len(after) == 0 {
		// the run ended with its window (--stop-after-profile, a short
		// program), which the default schedule opens after 5 steps: the
		// unprofiled steps but the first are all there is. A warm-up
		// among them only raises the median, which the window must then
		// exceed (nanoGPT on an H100: steps 2-5 took 15.7-18.6 ms, the
		// window's 28-35 ms, the profiler's cost on ~4,300 ops a step)
		outside = median(append(early, before...))
	}
	return outside, median(in)
}

// lessLoaderWaits is the steps, each less its wait for a DataLoader
// (torchvision's classification reference, ResNet-50 on an H100: steps
// of 23-90 ms next to the window, up to 43 ms of them waiting; the
// window's, on batches loaded before it, 43-59 ms waiting for none).
func lessLoaderWaits(steps []steptimes.Step) []steptimes.Step {
	out := slices.Clone(steps)
	for i := range out {
		if out[i].DurS > 0 {
			out[i].DurS = max(out[i].DurS-out[i].LoaderWaitS, 1e-9)
		}
	}
	return out
}

// neighbourSteps: at least this many steps after the window are its
// neighbours (twice the window's steps where more).
const neighbourSteps = 10

// OutlierSteps are the window's steps working over twice its median
// (inside), and those on the run's period (nil: none found outside the
// window) working over it. Working: less the time a step waited for a
// CPU, which does no more work: on a machine loaded by another job,
// steps that waited made outliers of the window, which then held "more
// than" the evaluation in every step (host.off-step went silent on a
// program scoring every batch with scikit-learn). The period's steps
// need not be twice the median: a 50 MB checkpoint every 10 steps of ~35
// ms took the window's step 10 to 2.1x in one run and under 2x in
// another.
func OutlierSteps(steps []steptimes.Step, median float64, period *PeriodicSteps) map[int]bool {
	onPeriod := func(n int) bool {
		return period != nil && period.Every > 0 && len(period.Steps) > 0 && (n-period.Steps[0])%period.Every == 0
	}
	if median <= 0 {
		return nil
	}
	out := map[int]bool{}
	for _, st := range steps {
		if work := st.DurS - st.CPUWaitS; st.InWindow && (work > 2*median || work > median && onPeriod(st.N)) {
			out[st.N] = true
		}
	}
	return out
}

// OutlierShare is the share of the window's time that its outlier steps
// spend above its median (inside), as the main thread's samples in the
// window, which come at even wall-clock intervals, would hold it: an
// outlier's waits for a CPU are sampled at its lines too (a checkpoint
// every 10 steps on two busy CPUs held 46% of the window's samples, its
// step's work above the median 21% of the window's time and its wall
// time above it 50%).
func OutlierShare(steps []steptimes.Step, median float64, outliers map[int]bool) float64 {
	var sum, above float64
	for _, st := range steps {
		if st.InWindow && st.DurS > 0 {
			sum += st.DurS
			if outliers[st.N] {
				above += st.DurS - median
			}
		}
	}
	if sum == 0 || median <= 0 {
		return 0
	}
	return above / sum
}

// startupSteps: the per-step record skips the first steps (imports,
// allocator warm-up, the first collections of a fresh heap).
const startupSteps = 3

// MemoryTrend fits a line through the memory of the steps after start-up:
// CUDA allocated memory when the program used CUDA for most steps, else
// the RSS. Nil for fewer than 8 steps. The steps after the recorded
// window are used alone when there are 8 of them, else those before it
// when there are 8: the profiler's buffers raise the RSS once, in the
// window, and a window in the first half of the run made a leak's later
// half grow less than half as fast as the line through all its steps
// (seen in CI: a 12-step window of a 39-step run).
func memoryTrend(rows []rundir.StepRow, growth []rundir.Growth) *MemoryTrend {
	var before, after []rundir.StepRow
	inWindow := false // a window came before (the rows are in step order)
	for _, r := range rows {
		switch {
		case r.Step <= startupSteps:
		case r.InWindow:
			inWindow, after = true, after[:0] // a later window: what follows it
		case inWindow:
			after = append(after, r)
		default:
			before = append(before, r)
		}
	}
	switch {
	case len(after) >= 8:
		rows = after
	case len(before) >= 8:
		rows = before
	}
	var xs, cuda, rss []float64
	var cx []float64
	for _, r := range rows {
		if r.Step <= startupSteps {
			continue
		}
		if r.CUDA >= 0 {
			cx, cuda = append(cx, float64(r.Step)), append(cuda, r.CUDA)
		}
		if r.RSS > 0 {
			xs, rss = append(xs, float64(r.Step)), append(rss, r.RSS)
		}
	}
	m := &MemoryTrend{Source: "rss", Growing: growth}
	if len(cuda) >= 8 && 2*len(cuda) >= len(rss) {
		m.Source, xs, rss = "cuda_allocated", cx, cuda
	}
	if len(xs) < 8 {
		return nil
	}
	m.Steps = len(xs)
	a, b, r2 := fitLine(xs, rss)
	m.SlopeBytes, m.R2 = b, r2
	m.FirstBytes, m.LastBytes = a+b*xs[0], a+b*xs[len(xs)-1]
	h := len(xs) / 2
	_, m.LateSlopeBytes, _ = fitLine(xs[h:], rss[h:])
	return m
}

// fitLine is the least-squares line y = a + b·x and its R².
func fitLine(xs, ys []float64) (a, b, r2 float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy, syy float64
	for i := range xs {
		sx, sy = sx+xs[i], sy+ys[i]
		sxx, sxy, syy = sxx+xs[i]*xs[i], sxy+xs[i]*ys[i], syy+ys[i]*ys[i]
	}
	vx, vy, cxy := sxx-sx*sx/n, syy-sy*sy/n, sxy-sx*sy/n
	if vx <= 0 {
		return sy / n, 0, 0
	}
	b = cxy / vx
	a = (sy - b*sx) / n
	if vy > 0 {
		r2 = cxy * cxy / (vx * vy)
	}
	return a, b, r2
}

// gcPauses is the mean GC pause and step over the steps after start-up
// (nil without step times).
func gcPauses(rows []rundir.StepRow, steps []steptimes.Step, sites []rundir.GCSite) *GCPauses {
	dur := map[int]float64{}
	for _, st := range steps {
		dur[st.N] = st.DurS
	}
	g := &GCPauses{Sites: sites}
	var pause, step float64
	var n int
	for _, r := range rows {
		d, ok := dur[r.Step]
		if r.Step <= startupSteps || !ok || d <= 0 {
			continue
		}
		pause += r.GCPauseS
		step += d
		g.CollectionsPerStep += float64(r.GCCount)
		n++
	}
	if n == 0 || step <= 0 {
		return nil
	}
	g.Steps = n
	g.PausePerStepS, g.StepS = pause/float64(n), step/float64(n)
	g.Share = pause / step
	g.CollectionsPerStep /= float64(n)
	return g
}

// settleSteps is the run of steps settledStep takes medians over, and
// windowRoom the steps a later window needs after --skip-first (warm-up
// and recorded, with the defaults and a margin).
const (
	settleSteps = 5
	windowRoom  = 10
)

// FirstSettledStep is the first step after the window from which the steps
// stay settled (see RunEvidence.SettledStep), 0 if none.
func FirstSettledStep(steps []steptimes.Step) int {
	var tail []float64
	for _, st := range steps[len(steps)/2:] {
		if st.DurS > 0 {
			tail = append(tail, st.DurS)
		}
	}
	usual := median(tail)
	last := -1 // the last step of the window
	for i, st := range steps {
		if st.InWindow {
			last = i
		}
	}
	if usual <= 0 || last < 0 {
		return 0
	}
	// the step after the middle of the last run of settleSteps (from the
	// window on) whose median is over the bar
	from := last + 1
	run := make([]float64, settleSteps)
	for j := len(steps) - settleSteps; j > last; j-- {
		for k := range run {
			run[k] = steps[j+k].DurS
		}
		if median(run) > 1.3*usual {
			from = j + settleSteps/2 + 1
			break
		}
	}
	if from+windowRoom > len(steps) {
		return 0
	}
	return steps[from].N
}

// runMedian is the median of the steps outside the profiler window after
// start-up: what a step costs without the profiler.
func runMedian(steps []steptimes.Step) float64 {
	var xs []float64
	for _, st := range steps {
		if st.N > startupSteps && !st.InWindow && st.DurS > 0 {
			xs = append(xs, st.DurS)
		}
	}
	return median(xs)
}

// medianCalls is the median outermost module calls of the steps after
// start-up that the agent counted them on (0: none).
func medianCalls(steps []steptimes.Step) float64 {
	var xs []float64
	for _, st := range steps {
		if st.N > startupSteps && st.Calls > 0 {
			xs = append(xs, float64(st.Calls))
		}
	}
	if len(xs) == 0 {
		return 0
	}
	return median(xs)
}

func median(xs []float64) float64 {
	if len(xs) < 3 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// FromRun is the evidence of a run directory's processes, keyed by rank
// (a process without a rank tag gets rank 0 when it is the only one).
func FromRun(run *rundir.Run) map[int]*RunEvidence {
	out := map[int]*RunEvidence{}
	for _, pf := range run.Processes {
		ev := FromProcess(pf)
		rank := ev.Rank
		if rank < 0 && len(run.Processes) == 1 {
			rank = 0
		}
		if rank >= 0 {
			out[rank] = ev
		}
	}
	return out
}

// readsFile reports whether a stack's innermost frame in I/O code
// (ioFiles) loads or reads (torch.load, np.load, pickle.load, json.load,
// safetensors' load_file) rather than saves, dumps or writes.
func readsFile(p *pyprofile.Profile, frames []int) bool {
	for i := len(frames) - 1; i >= 0; i-- {
		if f := p.Frames[frames[i]]; matchAny(f.File, ioFiles) {
			n := strings.ToLower(f.Func)
			return (strings.Contains(n, "load") || strings.Contains(n, "read") || strings.Contains(n, "fromfile")) &&
				!strings.Contains(n, "save") && !strings.Contains(n, "dump") && !strings.Contains(n, "write")
		}
	}
	return false
}

// ownWork reports whether a sampled stack runs the program's own code: the
// innermost frame outside the standard library is the program's, so the
// standard library works for whoever called it (random.choice building a
// corpus is the program's work; subprocess waiting for the compiler
// torch.compile started, or a model's loading in a package, is not).
func ownWork(p *pyprofile.Profile, frames []int) bool {
	for i := len(frames) - 1; i >= 0; i-- {
		f := p.Frames[frames[i]].File
		if !pyprofile.IsLibraryFile(f) {
			return true
		}
		if pyprofile.IsPackageFile(f) {
			return false
		}
	}
	return false
}

// notOwn is RunEvidence.NotOwnS.
func notOwn(steps []steptimes.Step, rows []rundir.StepRow) map[int]float64 {
	out := map[int]float64{}
	for _, st := range steps {
		out[st.N] += st.CPUWaitS
	}
	for _, r := range rows {
		out[r.Step] += r.GCPauseS
	}
	return out
}

// StartsWorkersEachEpoch: the loader's worker processes start again at
// every epoch (persistent_workers=False, or a DataLoader made anew for
// each pass), over at least 3 epochs.
func (l Loader) StartsWorkersEachEpoch() bool {
	return l.NumWorkers != nil && *l.NumWorkers > 0 && (l.MadeAnew() || l.PersistentWorkers != nil && !*l.PersistentWorkers) && l.Iterators >= 3
}

// RestartsWorkers: StartsWorkersEachEpoch, and starting and stopping the
// workers takes at least as long as the wait for the epochs' other
// batches.
func (l Loader) RestartsWorkers() bool {
	return l.StartsWorkersEachEpoch() && l.Restart() > 0 && l.Restart() >= l.WaitS-l.FirstWaitS
}

// restartSteps sums, over the iterators made after the first (starts:
// [step, time] of each, rundir.LoaderInfo.Starts), the time from the
// making to the end of the step it was made in, plus the step after,
// less what those steps would take without it: the median step, and
// another where the steps are optimizer steps or forwards (the step's own
// work follows the making; with the DataLoader as the step source its
// next batch ends the step). What the step did before the making (an
// evaluation at the epoch's end) is left out, and so is a loader that
// takes under a batch a step between its starts. Only restarts whose two
// steps were timed outside the window count (the profiler inflates the
// window's); n is those. The sum is kept whole, not clipped restart by
// restart, so the steps' noise evens out. denoising-diffusion-pytorch's
// Trainer (a 1.8 GB process, 8 steps an epoch on a CPU) took 3.2-4.3 s in
// each epoch's first step against a 2.1-2.4 s median, with 150k
// copy-on-write faults and 2 s of system time where other steps had 20k
// and 0.1 s, while its restart_s was 0.2 s an epoch.
func restartSteps(steps []steptimes.Step, l rundir.LoaderInfo, median float64, source string) (excessS float64, n int) {
	starts := l.Starts
	if len(starts) < 2 || median <= 0 {
		return 0, 0
	}
	// the steps' own loader takes a batch a step or more between its
	// starts; an evaluation's loader, made at each epoch's end, takes all
	// of its batches inside one step, and that step's time is the
	// evaluation's, not its workers' start
	if apart := (starts[len(starts)-1][0] - starts[0][0]) / float64(len(starts)-1); float64(l.Batches)/float64(max(1, l.Iterators)) < 0.9*apart {
		return 0, 0
	}
	at := make(map[int]steptimes.Step, len(steps))
	for _, st := range steps {
		at[st.N] = st
	}
	own := median // the step's own work after the making
	if source == "dataloader" {
		own = 0
	}
	for _, start := range starts[1:] {
		a, okA := at[int(start[0])]
		b, okB := at[int(start[0])+1]
		if !okA || !okB || a.InWindow || b.InWindow || start[1] < a.StartS || start[1] > a.StartS+a.DurS {
			continue
		}
		excessS += a.StartS + a.DurS - start[1] + b.DurS - median - own
		n++
	}
	return max(0, excessS), n
}

// madeAnew: the program makes a DataLoader for each pass over the
// dataset (an evaluation's loader made in the loop): at least half the
// iterators come from loaders of their own, and persistent_workers cannot
// keep workers that no later pass asks for.
func (l Loader) MadeAnew() bool { return l.Loaders >= 2 && 2*l.Loaders >= l.Iterators }

// sampleMethod is the dataset's method that makes a sample.
// siteRef is " (looped over at FILE:LINE)" when the run recorded the
// program's loop over the loader, else "".
func (l Loader) SiteRef() string {
	if l.Site == nil {
		return ""
	}
	return fmt.Sprintf(" (looped over at %s:%d)", filepath.Base(l.Site.File), l.Site.Line)
}

func (l Loader) SampleMethod() string {
	if l.Iterable {
		return "__iter__"
	}
	return "__getitem__"
}

// restart is what the epochs' starts and ends took: making the
// iterators, their first batches and the calls that ended them.
func (l Loader) Restart() float64 { return l.RestartS + l.FirstWaitS }

// flag returns one of torch's flags as the agent read them in the window.
func (e *Env) Flag(name string) (any, bool) {
	if e == nil {
		return nil, false
	}
	v, ok := e.Flags[name]
	return v, ok
}
