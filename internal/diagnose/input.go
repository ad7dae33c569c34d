package diagnose

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

var _ = addRule(Rule{
	ID: "input.loader", Class: Input, Factor: 0.9,
	When: "DataLoader wait >= MinFinding of the step (trace annotation or agent measurement)",
	Change: orTry("load batches in background workers: DataLoader(num_workers=N, persistent_workers=True, pin_memory=True on GPU)",
		"make the Dataset's __getitem__ cheaper: a batch that loads faster leaves the workers less to hide"),
	detect: (*state).inputFinding,
	Fires:  "driver.TestVerdictCorpus/unmarked_train_loop", Silent: "driver.TestVerdictCorpus/unmarked_decode_annotated",
})

// inputFinding: input.loader.
func (s *state) inputFinding() {
	if !s.big(Input) {
		return
	}
	var where []Location
	change := ""
	var try map[string]string // the run-time change for run --verify
	tryPct := -1.0            // its own predicted saving, when not the finding's
	if s.py != nil {
		where = s.pyLines(s.py.LoaderLines, 2)
	}
	workerLines, costs := s.workerLines()
	// with worker processes, the main thread only waits in __next__:
	// the dataset line that costs the time is in the workers
	where = append(workerLines, where...)
	if r := s.in.Run; r != nil {
		for i, l := range r.Loaders {
			nw := "?"
			if l.NumWorkers != nil {
				nw = fmt.Sprint(*l.NumWorkers)
			}
			loc := Location{Kind: "dataloader", Name: l.Dataset, Note: "num_workers=" + nw + " pin_memory=" + ptrStr(l.PinMemory) + " persistent_workers=" + ptrStr(l.PersistentWorkers)}
			if i != s.waitedLoader() {
				// another loader (an evaluation's): named, not judged
				loc.Note += fmt.Sprintf("; not the loader waited for (%s of wait over %d batches)", units.Seconds(l.WaitS), l.Batches)
				where = append(where, loc)
				continue
			}
			if len(r.Loaders) > 1 {
				loc.Note += fmt.Sprintf("; the loader waited for (%s of wait over %d batches)", units.Seconds(l.WaitS), l.Batches)
			}
			where = append(where, loc)
			// the workers' line, when named, already says what to make
			// cheaper
			cheaperSample := "make " + l.SampleMethod() + " cheaper"
			if costs != "" {
				cheaperSample = ""
			}
			var making float64 // a batch's making in the main process, a step, where the workers idle
			idle := false
			if l.NumWorkers != nil {
				making, idle = s.idleWorkersMake(*l.NumWorkers)
			}
			switch {
			case l.NumWorkers != nil && *l.NumWorkers == 0:
				n := s.advisedWorkers()
				cheaper := func(c string) string { return orTry(c, "make the dataset's "+l.SampleMethod()+" cheaper") }
				if s.py != nil && len(s.py.LoaderLines) > 0 {
					// the line that loads: a collate_fn filling a batch
					// element by element is not __getitem__
					what := loadingWhat(l.SampleMethod(), s.py.LoaderLines[0])
					cheaper = func(c string) string {
						return orTry(c, "make "+what+" cheaper: a batch that loads faster leaves the workers less to hide")
					}
				}
				if s.py != nil && s.py.LoaderIOShare >= 0.5 {
					cheaper = func(c string) string {
						return thenDo(c, fmt.Sprintf("pack the samples into one file read or memory-mapped once (one saved tensor, np.memmap) instead of a file per sample: loading is file reads (%.0f%% of its samples in torch.load, np.load, pickle and the like), which workers only overlap", pct(s.py.LoaderIOShare)))
					}
				}
				change = fmt.Sprintf("the DataLoader over %s%s loads its batches in the main thread (num_workers=0): DataLoader(num_workers=%d, persistent_workers=True%s) loads them in background workers while the step runs", cmp.Or(l.Dataset, "its dataset"), l.SiteRef(), n, pinText(s.device))
				if s.loadingWaits() {
					change += fmt.Sprintf(" (the loading waits rather than computes, %.0f%% of its samples off the CPU: waiting workers need no CPU, so more of them than CPUs still overlap)", pct(s.py.LoaderOffCPU))
				}
				change = cheaper(change)
				try = map[string]string{"num_workers": fmt.Sprint(n), "persistent_workers": "true"}
				if perBatch := l.WaitS / float64(max(l.Batches, 1)); l.WaitS > 0 && l.Batches > 0 && perBatch < s.p.WorkerHandoverS {
					// a batch made faster than a worker can hand one over
					// an iterable dataset yields samples the loader collates
					// one by one: Lightning's DQN template, 16 tuples of 5
					// tensors a batch, ran 1.21x yielding slices of whole batches
					oneCall := "for a dataset indexable by a list of indices: DataLoader(dataset, sampler=BatchSampler(RandomSampler(dataset), batch_size, drop_last=False), batch_size=None)"
					if l.Iterable {
						oneCall = "an iterable dataset's __iter__ yields whole batches (slices of tensors it holds, not one sample at a time for the loader to collate), with DataLoader(dataset, batch_size=None)"
					}
					change = fmt.Sprintf("the DataLoader over %s%s loads a batch in the main thread in %s, less than handing a batch over from a worker process takes (~1-2 ms on the project's test machine: a TensorDataset's batches of 32 x 784 floats took 0.22 ms each loaded in place, 1.7-1.9 ms from one or two workers), so workers would slow the steps, not hide the loading: "+
						"make the dataset's %s cheaper, or fetch each batch in one call (%s)",
						cmp.Or(l.Dataset, "its dataset"), l.SiteRef(), units.Duration(perBatch*1e6), l.SampleMethod(), oneCall)
					change += ": " + workersNotAdvised(n, "")
					tryPct = 0
				} else if _, _, ok := s.moreWorkers(); ok && s.workersShareCPUs() {
					// workers would take the CPUs the step's ops use
					r := s.in.Run
					in := min(1, s.share[Input])
					what := "the dataset's " + l.SampleMethod()
					if s.py != nil && len(s.py.LoaderLines) > 0 {
						what = loadingWhat(l.SampleMethod(), s.py.LoaderLines[0])
					}
					change = fmt.Sprintf("make %s cheaper: a batch takes %s to load against %s for the rest of the step, mostly native ops on %d intra-op threads on %d CPUs and no accelerator, so workers would load on the CPUs the step's ops already use and hide little of it, if any, while each batch is handed over between processes",
						what, units.Duration(in*s.step), units.Duration((1-in)*s.step), r.Env.NumThreads, r.Env.CPUs)
					// one worker made such runs slower on the project's 2
					// CPUs: pytorch/examples' mnist_rnn 1.55x (median of 6
					// pairs), facebookresearch/dlrm's random batches 1.12x
					// the whole run (2 pairs)
					change += ": " + workersNotAdvised(n, ", as workers slowed such runs by 1.1-1.6x on the project's 2-CPU machine")
					tryPct = 0
				} else if w, ok := s.workersSaving(); ok && w < s.share[Input]/2 && s.py != nil && len(s.py.LoaderLines) > 0 {
					// the workers this machine has cannot keep up:
					// the loading must get cheaper first
					in := min(1, s.share[Input])
					change = fmt.Sprintf("make %s cheaper: a batch takes %s to load against %s for the rest of the step, so %s on this machine could not keep up (the step would still take a batch's load over the workers: ~%.0f%% saved)",
						loadingWhat(l.SampleMethod(), s.py.LoaderLines[0]), units.Duration(in*s.step), units.Duration((1-in)*s.step), units.Things(n, "worker"), pct(w))
					change = thenDo(change, fmt.Sprintf("DataLoader(num_workers=%d, persistent_workers=True%s): overlaps what is left with the step", n, pinText(s.device)))
					tryPct = pct(w)
				}
				if s.py != nil && s.py.LoaderDataFrameRows {
					// the first change: workers would only share the
					// cost out
					change = thenDo(dataFrameRowsChange, fmt.Sprintf("the batches load in the main thread (num_workers=0): DataLoader(num_workers=%d, persistent_workers=True%s) overlaps what is left with the step", n, pinText(s.device)))
				} else if c := inMemoryChange(l); c != "" {
					// the batches come from memory then: no workers,
					// and nothing the agent can change at run time
					change, try = c, nil
				} else if l.Dataset == "TensorDataset" && !l.Iterable && l.BatchSize != nil && *l.BatchSize > 1 && !strings.Contains(change, "BatchSampler") {
					// its __getitem__ is one index into tensors in memory:
					// the cost is the per-sample path (a fetch and a
					// collate of each of the batch's samples), which no
					// cheaper __getitem__ removes
					change = thenDo(fmt.Sprintf("a TensorDataset's batch is fetched one sample at a time (%d index calls, then stacked), though its tensors are in memory: fetch each batch in one call: DataLoader(dataset, sampler=BatchSampler(RandomSampler(dataset), %d, drop_last=False), batch_size=None) (SequentialSampler where it does not shuffle) indexes the tensors once a batch (batches of 512 token ids: 2.23 -> 0.23 ms a batch on a CPU)",
						*l.BatchSize, *l.BatchSize), change)
				}
			case l.RestartsWorkers():
				change, tryPct = s.restartChange(l)
				try = map[string]string{"persistent_workers": "true"}
			case l.NumWorkers != nil && *l.NumWorkers > 0 && s.workersWait():
				// workers asleep in reads need no CPU: more of them
				// overlap more reads, however busy the CPUs are (4
				// workers reading from "network storage", 12% of
				// their busy time on a CPU, were told more workers
				// would not help)
				w := s.in.Run.Workers
				change = fmt.Sprintf("the %d workers mostly wait rather than compute (%.0f%% of their busy time on a CPU: file or network reads, a sleep, a lock): waiting workers need no CPU, so more of them overlap more of the waits: DataLoader(num_workers=%d, ...) and a larger prefetch_factor", *l.NumWorkers, 100*w.CPUShare, 2**l.NumWorkers)
				change = orTry(change, "faster reads (local disk, fewer and larger files): less for the workers to wait on")
				try = map[string]string{"num_workers": fmt.Sprint(2 * *l.NumWorkers)}
			case idle:
				wait := s.share[Input] * s.step
				change = fmt.Sprintf("the %d workers keep up (busy making batches %.1f%% of their time): the step waits %s for the batches' hand-over between processes, not for their making (~%s a batch in the main process): DataLoader(num_workers=0) makes them in the main process without it",
					*l.NumWorkers, 100*r.Workers.BusyShare, units.Duration(wait), units.Duration(making))
				try = map[string]string{"num_workers": "0"}
				tryPct = pct((wait - making) / s.step)
			case l.NumWorkers != nil && s.oversubscribed():
				change = orTry(units.Things(*l.NumWorkers, "worker")+" and the main process's threads already want more CPUs than there are, so more workers would not help: leave the workers more cores (torch.set_num_threads(1) in the main process)", cheaperSample)
			case l.NumWorkers != nil:
				change = units.Things(*l.NumWorkers, "worker") + " cannot keep up: raise num_workers or prefetch_factor"
				if from, to, ok := s.moreWorkers(); ok {
					// the workers are the step's limit: more of them turn
					// out more batches (the CPUs have room for them)
					change = fmt.Sprintf("%s cannot keep up: the step waits for each batch, and the CPUs have room for more: DataLoader(num_workers=%d)", units.Things(from, "worker"), to)
					if s.usesGPU && r.Env != nil {
						change += fmt.Sprintf(" (the step's ops run on the device, so the main process's %d intra-op threads leave the CPUs to the workers)", r.Env.NumThreads)
					}
					change = orTry(change, cheaperSample)
					try = map[string]string{"num_workers": fmt.Sprint(to)}
					if w, ok := s.workersSaving(); ok {
						tryPct = pct(w)
					}
				} else if cheaperSample != "" {
					change = orTry(units.Things(*l.NumWorkers, "worker")+" cannot keep up: "+cheaperSample, "raise num_workers or prefetch_factor")
				}
			}
			if r.WorkersReadDataFrameRows && l.NumWorkers != nil && *l.NumWorkers > 0 {
				change = thenDo(dataFrameRowsChange, change)
			}
			if costs != "" && l.NumWorkers != nil && *l.NumWorkers > 0 {
				change = thenDo(costs, change)
			}
			if len(r.Loaders) > 1 && change != "" {
				change = fmt.Sprintf("the step waits for the DataLoader over %s (%s of the run's %s of DataLoader wait; the program has %d loaders): %s",
					cmp.Or(l.Dataset, "its dataset"), units.Seconds(l.WaitS), units.Seconds(s.loaderWaitS()), len(r.Loaders), change)
			}
		}
		// the loader waited for first: the report shows the first few
		if i := s.waitedLoader(); i >= 0 && len(r.Loaders) > 1 {
			k := slices.IndexFunc(where, func(l Location) bool { return l.Kind == "dataloader" })
			j := k + i
			where[k], where[j] = where[j], where[k]
		}
	}
	if len(where) == 0 {
		where = append(where, Location{Kind: "dataloader", Name: "DataLoader __next__"})
	}
	ms := s.ev[Input]
	if in := s.in.Input; in != nil && in.Calls > 0 && s.device {
		ms = append(ms, Evidence{"device idle during DataLoader wait", in.GPUIdlePct, "%", "input_pipeline"})
	}
	// the title quotes the measurement the share came from: the agent's
	// step and the trace's mean step differ, so share × trace step
	// would disagree with the evidence below it
	share := s.findingPct(s.share[Input])
	if s.inputSamples {
		share = pct(s.share[Input]) // the run's, as the samples are
	}
	title := fmt.Sprintf("The step waits for data: %s (%.0f%% of the step)", s.inputWait, share)
	if run, win, _ := s.runInput(); s.inputRun {
		title = fmt.Sprintf("The step waits for data %.0f%% of the run's step time (%.0f%% in the recorded window, whose steps took batches loaded before it)", pct(run), pct(win))
	}
	f := s.finding("input.loader", title, s.at(Input), ms, where, change)
	f.Try = try
	if try != nil && tryPct >= 0 {
		tryPct = stats.Round1(tryPct * s.step / s.findingsStep()) // a share of the mean step
		f.TrySavingPct = &tryPct
	}
	s.emit(f)
}

// fixedTransforms are torchvision transforms that do the same to every
// sample (no random draw), which a whole array can take at once.
var fixedTransforms = map[string]bool{"ToTensor": true, "Normalize": true}

// inMemoryChange is the change for a DataLoader without workers over a
// torchvision dataset that holds its samples as one array (MNIST's,
// CIFAR's .data) and transforms each with ToTensor and Normalize alone:
// its __getitem__ makes a PIL image of one sample and transforms it, 128
// times for a batch of 128, where one tensor op does the whole array
// once. pytorch/examples' VAE on MNIST (ToTensor, batch 128, loading 59%
// of the step on a CPU): 31.2 and 26.2 ms a step as is, 13.3 and 13.8 ms
// transformed once and fetched a batch at a time (two interleaved runs of
// an epoch), 2.1x predicted; its mnist_rnn (ToTensor and Normalize, batch
// 64): 29.1 and 26.3 -> 11.3 and 10.9 ms, 2.46x predicted. "" where a transform
// draws at random (augmentation: each sample's own draw) or is unknown,
// or the targets are transformed too.
func inMemoryChange(l runevidence.Loader) string {
	if !inMemoryFixed(l) {
		return ""
	}
	// ToTensor's result for the whole array: floats in [0, 1], channels
	// first (MNIST's is N x H x W, CIFAR's N x H x W x C)
	x := "dataset.data.unsqueeze(1).float().div(255)"
	if len(l.MemoryShape) == 4 {
		x = "torch.as_tensor(dataset.data).permute(0, 3, 1, 2).float().div(255)"
	}
	if slices.Contains(l.Transforms, "Normalize") {
		x += ", then (x - mean) / std with Normalize's mean and std as (1, C, 1, 1) tensors"
	}
	dims := make([]string, len(l.MemoryShape))
	for i, n := range l.MemoryShape {
		dims[i] = strconv.Itoa(n)
	}
	return fmt.Sprintf("%s holds its %s samples in memory as one array (its .data, %s), and its __getitem__ makes a PIL image of each and runs %s on it, one sample at a time, %d times a batch: "+
		"transform the whole array once before the loop (x = %s) and fetch each batch in one call: "+
		"DataLoader(TensorDataset(x, torch.as_tensor(dataset.targets)), sampler=BatchSampler(RandomSampler(x), %d, drop_last=False), batch_size=None) "+
		"(pytorch/examples' mnist_rnn and VAE on MNIST: 1.9-2.6x a step on a CPU)",
		l.Dataset, units.Count(l.MemoryShape[0]), strings.Join(dims, " x "), strings.Join(l.Transforms, ", "), *l.BatchSize, x, *l.BatchSize)
}

// inMemoryFixed: l's dataset holds its samples as one array, fetched in
// batches, and transforms them with fixedTransforms alone, ToTensor
// among them (inMemoryChange).
func inMemoryFixed(l runevidence.Loader) bool {
	if len(l.MemoryShape) < 3 || len(l.MemoryShape) > 4 || l.Iterable || l.TargetTransform || l.BatchSize == nil || *l.BatchSize <= 1 || !slices.Contains(l.Transforms, "ToTensor") {
		return false
	}
	return !slices.ContainsFunc(l.Transforms, func(t string) bool { return !fixedTransforms[t] })
}

// inMemoryLeads: the loader waited for has no workers and inMemoryChange
// is its change, not workers.
func (s *state) inMemoryLeads() bool {
	i := s.waitedLoader()
	if i < 0 {
		return false
	}
	l := s.in.Run.Loaders[i]
	return l.NumWorkers != nil && *l.NumWorkers == 0 && inMemoryFixed(l)
}

// workersNotAdvised ends a change that leads with cheaper loading where
// workers are predicted to save nothing (tryPct 0: --verify does not try
// them), with what was measured of such runs (measured: "" or a clause).
func workersNotAdvised(n int, measured string) string {
	return fmt.Sprintf("leave the loading in the main process%s (bottleneck try --set num_workers=%d,persistent_workers=true measures workers)", measured, n)
}

// loadingWhat names what loads a batch in the main thread, to be made
// cheaper: the program's line the loading ran under (ll), that line's
// function where it is the dataset's code; where the line calls the
// loader (a loop over it, a call into a library that makes its own
// DataLoader: pytorch-tabnet's fit, whose TorchDataset indexes one
// sample at a time), the dataset's sample method (sample) and what
// follows it, which run below that line.
func loadingWhat(sample string, ll runevidence.Line) string {
	at := fmt.Sprintf("%s:%d", filepath.Base(ll.File), ll.Line)
	share := fmt.Sprintf("%.0f%% of the main thread's samples", ll.Pct)
	switch {
	case !ll.CallsLoader:
		return fmt.Sprintf("%s at %s (%s)", ll.Func, at, share)
	case strings.HasPrefix(strings.TrimSpace(ll.Text), "for "):
		return fmt.Sprintf("the dataset's %s and its transforms (loaded in the loop at %s, %s)", sample, at, share)
	case ll.Inside != nil:
		return fmt.Sprintf("the dataset's %s and the batch's collation (loaded in %s's %s, called at %s, %s)", sample, ll.Inside.Package, ll.Inside.Func, at, share)
	}
	return fmt.Sprintf("the dataset's %s and its transforms (loaded at %s, %s)", sample, at, share)
}

var _ = addRule(Rule{
	ID: "input.worker-restarts", Class: Periodic, Factor: 1,
	When:   "run evidence: a DataLoader whose workers start anew each epoch (persistent_workers=False, or the loader made anew each pass), >= 3 iterators, the restarts timed in the run's steps (from each iterator's making to the end of the step after it, less two median steps, one where the DataLoader is the step source; outside the window; a loader under a batch a step between its starts left out), and what keeping the workers saves (restartSaving) >= MinFinding of the run's step time, while the step's DataLoader wait is under MinFinding (input.loader names the restarts then); at stake: that saving, all of which the change saves (restartSaving is net of what kept workers still do)",
	Change: "DataLoader(..., persistent_workers=True): the workers start once and serve every epoch",
	detect: (*state).restartFinding,
	Fires:  "TestRestartFinding", Silent: "TestRestartFinding",
})

// restartFinding: the epochs' worker restarts cost the steps around them
// more than the step waits for its batches (input.loader's, then): a
// fork of a large main process makes it copy each page it writes
// afterwards, which no DataLoader wait shows. denoising-diffusion-
// pytorch's Trainer on a CPU (2 workers, 8 steps an epoch, the step
// waiting 0.6% of its time for batches) lost 1.2-2 s an epoch, the
// agent's restart_s 0.2 s of it; persistent_workers=True measured
// 1.09x and 1.19x a step.
func (s *state) restartFinding() {
	r := s.in.Run
	if r == nil || s.big(Input) {
		return
	}
	best, share := -1, 0.0
	for i, l := range r.Loaders {
		if l.RestartsTimed == 0 || !l.StartsWorkersEachEpoch() {
			continue
		}
		if sh, ok := s.restartSaving(l); ok && sh > share {
			best, share = i, sh
		}
	}
	if best < 0 || share < s.p.MinFinding {
		return
	}
	l := r.Loaders[best]
	change, _ := s.restartChange(l)
	ms := []Evidence{{"iterators made (epochs)", float64(l.Iterators), "", "evidence"},
		{"from each restart to the end of the step after it, over the median steps, per restart", l.RestartStepsS / float64(l.RestartsTimed) * 1e6, "us", "evidence"},
		{"making and ending each iterator, and its first batch's wait", l.Restart() / float64(l.Iterators) * 1e6, "us", "evidence"},
		{"DataLoader wait, share of the step", pct(s.share[Input]), "%", "evidence"}}
	where := []Location{{Kind: "dataloader", Name: l.Dataset, Note: fmt.Sprintf("num_workers=%d persistent_workers=%s", *l.NumWorkers, ptrStr(l.PersistentWorkers))}}
	title := fmt.Sprintf("The DataLoader starts its %d workers anew for each of its %d epochs: the steps around each start take %s more than the others",
		*l.NumWorkers, l.Iterators, units.Seconds(l.RestartStepsS/float64(l.RestartsTimed)))
	f := s.finding("input.worker-restarts", title, share*s.step, ms, where, change)
	if !l.MadeAnew() {
		// a loader made anew each pass keeps no workers, whatever it is told
		f.Try = map[string]string{"persistent_workers": "true"}
	}
	s.emit(f)
}

// restartChange is the change for a loader that starts its workers anew
// each epoch (or is made anew each pass), and what keeping them saves in
// percent of the run's step time (-1: not known).
func (s *state) restartChange(l runevidence.Loader) (change string, savingPct float64) {
	perBatches, perRestart, perWait := float64(l.Batches)/float64(l.Iterators), units.Seconds(l.Restart()/float64(l.Iterators)), units.Seconds((l.WaitS-l.FirstWaitS)/float64(l.Iterators))
	if l.RestartsTimed > 0 {
		perRestart = units.Seconds(l.RestartStepsS / float64(l.RestartsTimed))
	}
	keep := "DataLoader(..., persistent_workers=True)"
	if s.framework() == "transformers" {
		// the Trainer makes the DataLoader: its argument sets it
		keep = "TrainingArguments(dataloader_persistent_workers=True)"
	}
	change = fmt.Sprintf("the DataLoader starts and stops its %d worker processes for each of its %d epochs (persistent_workers=False), %.0f batches each: %s an epoch, against %s of wait for its other batches: %s",
		*l.NumWorkers, l.Iterators, perBatches, perRestart, perWait, keep)
	if l.MadeAnew() {
		change = fmt.Sprintf("the program makes a new DataLoader over its %s for each of %d passes (an evaluation's loader made in the loop), and each starts and stops %d worker processes, %.0f batches a pass: %s a pass, against %s of wait for its other batches: make the DataLoader once, before the loop, with persistent_workers=True",
			l.Dataset, l.Iterators, *l.NumWorkers, perBatches, perRestart, perWait)
	}
	if l.RestartsTimed > 0 {
		change += " (timed from each start to the end of the step after it, over the median step: with Linux's default start method each start forks the main process, whose pages written after it are then copied one by one)"
	}
	savingPct = -1
	if share, ok := s.restartSaving(l); ok {
		// what keeping the workers saves, not the whole wait
		change += fmt.Sprintf(" (saves at least ~%.0f%% of the run's step time: the workers' start and stop, and of each first batch's wait what exceeds a batch's loading, which kept workers still do after iter())", pct(share))
		savingPct = pct(share)
	}
	if !l.MadeAnew() {
		// kept workers hold the copy of the dataset they were forked with
		change += "; kept workers keep the dataset as they first copied it: a Dataset the program changes between epochs (beyond its sampler) needs that change made in the workers"
	}
	if l.Dataset == "TensorDataset" {
		change = orTry(change, "num_workers=0: a TensorDataset's batches are in memory already, and workers only add the hand-over")
	}
	return change, savingPct
}
