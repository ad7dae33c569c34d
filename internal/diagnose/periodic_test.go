package diagnose

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// stepsWith is n steps of 20 ms, steps 8-12 in the window, with the
// durations of slow overriding theirs.
func stepsWith(n int, slow map[int]float64) []steptimes.Step {
	var out []steptimes.Step
	for i := 1; i <= n; i++ {
		d := 0.020
		if s, ok := slow[i]; ok {
			d = s
		}
		out = append(out, steptimes.Step{N: i, DurS: d, InWindow: i >= 8 && i <= 12})
	}
	return out
}

// realSteps are steps of a real run: step, seconds, the main thread's
// wait for a CPU, and 1 for a step in the window.
func realSteps(rows [][4]float64) []steptimes.Step {
	var out []steptimes.Step
	for _, r := range rows {
		out = append(out, steptimes.Step{N: int(r[0]), DurS: r[1], CPUWaitS: r[2], InWindow: r[3] == 1})
	}
	return out
}

// every is slow steps of d seconds every k steps from first.
func every(k, first, n int, d float64) map[int]float64 {
	m := map[int]float64{}
	for i := first; i <= n; i += k {
		m[i] = d
	}
	return m
}

func TestPeriodicSteps(t *testing.T) {
	// a 200 ms checkpoint every 40 steps of 20 ms
	p := runevidence.Periodic(stepsWith(300, every(40, 41, 300, 0.2)), nil)
	if p == nil || p.Every != 40 || p.Count != 7 || p.Steps[0] != 41 || len(p.Steps) != 4 {
		t.Fatalf("periodic %+v", p)
	}
	// 7 x 180 ms above the median over 7 x 200 ms + 285 x 20 ms
	if want := 7 * 0.18 / (7*0.2 + 285*0.02); p.Share < want*0.99 || p.Share > want*1.01 || math.Abs(p.MeanS-0.2) > 1e-9 || math.Abs(p.MedianS-0.02) > 1e-9 {
		t.Errorf("share %v (want %v), mean %v, median %v", p.Share, want, p.MeanS, p.MedianS)
	}
	// one gap in three off (a step counted twice) still repeats
	slow := every(40, 41, 300, 0.2)
	delete(slow, 161)
	slow[162] = 0.2
	if p := runevidence.Periodic(stepsWith(300, slow), nil); p == nil || p.Every != 40 {
		t.Errorf("one step off: %+v", p)
	}
	// slow steps off the period (a collection, the machine's load) are
	// noise: the period and its share hold (a Lightning run: slow steps
	// 3, 20, 40, 50, 60, 80, 100, 103...)
	slow = every(40, 41, 300, 0.2)
	slow[17], slow[95], slow[230] = 0.1, 0.1, 0.1
	if p := runevidence.Periodic(stepsWith(300, slow), nil); p == nil || p.Every != 40 || p.Count != 7 || math.Abs(p.MeanS-0.2) > 1e-9 {
		t.Errorf("with noise: %+v", p)
	}
	// a busy spell: dozens of short outliers beside the period's few
	// long ones (an RL loop's rollout every 64 updates), and
	// steps slow only by their wait for a CPU, are noise
	slow = every(64, 65, 700, 0.11)
	for n := 300; n < 360; n += 3 {
		slow[n] = 0.045 + 0.002*float64(n%7)
	}
	steps := stepsWith(700, slow)
	for i := range steps {
		if n := steps[i].N; n%5 == 0 && slow[n] == 0 {
			steps[i].DurS, steps[i].CPUWaitS = 0.3, 0.28
		}
	}
	if p := runevidence.Periodic(steps, nil); p == nil || p.Every != 64 || p.Count != 10 {
		t.Errorf("a busy spell: %+v", p)
	}
	// short outliers between every two long ones, and before the first:
	// no two long ones are consecutive outliers (a PPO run: a rollout of
	// ~1 s every 320 updates of 3 ms, among steps of 6-17 ms)
	noise := func(slow map[int]float64) map[int]float64 {
		for n := 100; n < 3000; n += 137 {
			if _, ok := slow[n]; !ok {
				slow[n] = 0.05
			}
		}
		return slow
	}
	if p := runevidence.Periodic(stepsWith(3000, noise(every(320, 321, 3000, 1.0))), nil); p == nil || p.Every != 320 || p.Count != 9 || p.Steps[0] != 321 {
		t.Errorf("among short outliers: %+v", p)
	}
	// ... but long ones off any period stay irregular
	if p := runevidence.Periodic(stepsWith(3000, noise(map[int]float64{400: 1, 1000: 1, 1150: 1, 2000: 1, 2900: 1})), nil); p != nil {
		t.Errorf("irregular among short outliers: %+v", p)
	}
	// every 4th step waits for the DataLoader's next round of batches:
	// input, not periodic work
	steps = stepsWith(300, every(4, 5, 300, 0.06))
	for i := range steps {
		if steps[i].DurS > 0.05 {
			steps[i].LoaderWaitS = 0.045
		}
	}
	if p := runevidence.Periodic(steps, nil); p != nil {
		t.Errorf("DataLoader rounds: %+v", p)
	}
	// steps that are all DataLoader wait leave microseconds: every 3rd
	// step 150 µs slower than the rest is not periodic work
	steps = stepsWith(300, nil)
	for i := range steps {
		steps[i].DurS, steps[i].LoaderWaitS = 0.032, 0.03195
		if steps[i].N%3 == 0 {
			steps[i].DurS += 0.00015
		}
	}
	if p := runevidence.Periodic(steps, nil); p != nil {
		t.Errorf("steps all waiting: %+v", p)
	}
	for name, steps := range map[string][]steptimes.Step{
		"irregular":          stepsWith(300, map[int]float64{17: 0.2, 61: 0.2, 64: 0.2, 150: 0.2, 233: 0.2}),
		"two":                stepsWith(300, map[int]float64{41: 0.2, 81: 0.2}),
		"every other step":   stepsWith(300, every(2, 5, 300, 0.05)),
		"in the window only": stepsWith(300, map[int]float64{8: 0.2, 10: 0.2, 12: 0.2}),
		"under twice":        stepsWith(300, every(40, 41, 300, 0.039)),
		"start-up":           stepsWith(300, map[int]float64{1: 0.2, 2: 0.2, 3: 0.2}),
		// three on a period, but most of its places are fast and most
		// slow steps are off it
		"sparse": stepsWith(300, map[int]float64{41: 0.2, 81: 0.2, 121: 0.2, 17: 0.2, 33: 0.2, 59: 0.2, 97: 0.2, 150: 0.2, 212: 0.2}),
	} {
		if p := runevidence.Periodic(steps, nil); p != nil {
			t.Errorf("%s: %+v", name, p)
		}
	}
	// a CPU program on two busy CPUs (examples/diagnose/
	// embedding_dense_adam.py --rows 50000 --samples 1024 --steps 30, two
	// busy loops beside it): step, seconds, the main thread's wait for a
	// CPU, in the window. Steps 5, 13 and 29 are over twice the median
	// less their waits, 3 of the 4 places of "every 8 steps": slow steps
	// as frequent, placed at random, fit some period that well too often
	if p := runevidence.Periodic(realSteps([][4]float64{{1, 0.0501, 0, 0}, {2, 0.0620, 0.0350, 0}, {3, 0.0413, 0.0210, 0}, {4, 0.0399, 0.0210, 0},
		{5, 0.0938, 0.0493, 0}, {6, 0.0348, 0.0198, 1}, {7, 0.0574, 0.0291, 1}, {8, 0.0650, 0.0374, 1}, {9, 0.0579, 0.0291, 1}, {10, 0.0401, 0.0200, 1},
		{11, 0.0312, 0.0159, 1}, {12, 0.0332, 0.0161, 1}, {13, 0.1626, 0.0943, 0}, {14, 0.0641, 0.0322, 0}, {15, 0.0218, 0.0121, 0}, {16, 0.0240, 0.0121, 0},
		{17, 0.0260, 0.0121, 0}, {18, 0.0281, 0.0148, 0}, {19, 0.0297, 0.0148, 0}, {20, 0.0171, 0.0093, 0}, {21, 0.0176, 0.0093, 0}, {22, 0.0210, 0.0093, 0},
		{23, 0.0172, 0.0095, 0}, {24, 0.0171, 0.0095, 0}, {25, 0.0231, 0.0095, 0}, {26, 0.0666, 0.0341, 0}, {27, 0.0176, 0.0198, 0}, {28, 0.0591, 0.0198, 0},
		{29, 0.1513, 0.0768, 0}}), nil); p != nil {
		t.Errorf("a busy machine's random slow steps: %+v", p)
	}
	// ... while a checkpoint at the same steps of as short a run is
	// periodic: its 4 places are all slow, and no other step is
	if p := runevidence.Periodic(stepsWith(30, every(8, 5, 30, 0.2)), nil); p == nil || p.Every != 8 || p.Count != 4 {
		t.Errorf("every 8 steps of a short run: %+v", p)
	}
	// the slow steps are full collections: gc.pauses', not periodic work
	var rows []rundir.StepRow
	for n := range every(40, 41, 300, 0.2) {
		rows = append(rows, rundir.StepRow{Step: n, GCPauseS: 0.18})
	}
	if p := runevidence.Periodic(stepsWith(300, every(40, 41, 300, 0.2)), rows); p != nil {
		t.Errorf("collections: %+v", p)
	}
}

func TestPeriodicFinding(t *testing.T) {
	periodic := runevidence.Periodic(stepsWith(300, every(40, 41, 300, 0.4)), nil)
	ioLines := []runevidence.Line{{File: "/w/train.py", Line: 13, Func: "<module>", Pct: 20}}
	evalLines := []runevidence.OffStepLine{{Line: runevidence.Line{File: "/w/train.py", Line: 20, Func: "<module>", Pct: 18}, Kind: runevidence.OffStepEval}}
	slowLines := []runevidence.Line{{File: "/w/train.py", Line: 30, Func: "<module>", Pct: 60}, {File: "/w/train.py", Line: 12, Func: "Env.step", Pct: 25}}
	two, zero, no := 2, 0, false
	for _, c := range []struct {
		name            string
		run             runevidence.RunEvidence
		title           string // "" : no finding
		change, verdict string
	}{
		{"checkpoint", runevidence.RunEvidence{Periodic: periodic, Python: &runevidence.PythonEvidence{RunIOShare: 0.2, RunIOLines: ioLines}},
			"Every 40 steps a step takes 400 ms, 20.0x the median (steps 41, 81, 121, 161, ...): ",
			"the write every 40 steps at train.py:13 blocks training for 380 ms each time: write asynchronously", "every 40 steps a step takes 400 ms"},
		{"evaluation", runevidence.RunEvidence{Periodic: periodic, Python: &runevidence.PythonEvidence{OffStepShare: 0.18, OffStep: evalLines}},
			"in " + runevidence.OffStepEval, "the " + runevidence.OffStepEval + " every 40 steps at train.py:20 takes 380 ms each time", ""},
		{"unknown", runevidence.RunEvidence{Periodic: periodic, Python: &runevidence.PythonEvidence{RunIOShare: 0.01, RunIOLines: ioLines}},
			"(steps 41, 81, 121, 161, ...)", "record one with bottleneck run --skip-first 38 --warmup 1 --active 2 (steps 40-41)", ""},
		// the slow steps' own samples name their lines (a rollout)
		{"slow steps' lines", runevidence.RunEvidence{Periodic: periodic, Python: &runevidence.PythonEvidence{SlowSamples: 40, SlowLines: slowLines}},
			"(steps 41, 81, 121, 161, ...)", "the slow steps' time goes to train.py:30 60%, train.py:12 25% (their main-thread samples): that work every 40 steps takes 380 ms", ""},
		// the loop's line that calls the evaluation leads (bigram.py's
		// estimate_loss every 300 steps, its samples in get_batch)...
		{"slow steps' loop line", runevidence.RunEvidence{Periodic: periodic, Python: &runevidence.PythonEvidence{SlowSamples: 40, SlowLines: slowLines,
			SlowLoopLines: []runevidence.Line{{File: "/w/train.py", Line: 108, Func: "<module>", Pct: 95}}}},
			"(steps 41, 81, 121, 161, ...)", "the slow steps' time goes to train.py:108 95% at the training loop's level, and inside it train.py:30 60%, train.py:12 25% (their main-thread samples)", ""},
		// ... not where it is the innermost line, nor under half of them
		{"slow steps' loop line is theirs", runevidence.RunEvidence{Periodic: periodic, Python: &runevidence.PythonEvidence{SlowSamples: 40, SlowLines: slowLines,
			SlowLoopLines: []runevidence.Line{{File: "/w/train.py", Line: 30, Func: "<module>", Pct: 90}}}},
			"(steps 41, 81, 121, 161, ...)", "the slow steps' time goes to train.py:30 60%, train.py:12 25% (their main-thread samples)", ""},
		{"slow steps' loop lines spread", runevidence.RunEvidence{Periodic: periodic, Python: &runevidence.PythonEvidence{SlowSamples: 40, SlowLines: slowLines,
			SlowLoopLines: []runevidence.Line{{File: "/w/train.py", Line: 108, Func: "<module>", Pct: 40}}}},
			"(steps 41, 81, 121, 161, ...)", "the slow steps' time goes to train.py:30 60%, train.py:12 25% (their main-thread samples)", ""},
		// a program that is one call of a framework: where in it
		{"slow steps inside a package", runevidence.RunEvidence{Periodic: periodic, Python: &runevidence.PythonEvidence{SlowSamples: 40, SlowLines: []runevidence.Line{{File: "/w/ppo.py", Line: 7, Func: "<module>", Pct: 100,
			Inside: &runevidence.LibraryCall{Package: "stable_baselines3", Func: "Policy.forward", Via: []string{"learn", "collect_rollouts"}, Pct: 76, Module: true}}}}},
			"(steps 41, 81, 121, 161, ...): 31% of the run's step time, in a module's forward", "the slow steps' time goes to ppo.py:7 100% (in stable_baselines3: collect_rollouts > Policy.forward (76%)) (their main-thread samples): " +
				"that work every 40 steps takes 380 ms each time, mostly in Policy's forward; if it calls the model once per item", ""},
		// ... not a module's: no batching advice
		{"slow steps inside a package's function", runevidence.RunEvidence{Periodic: periodic, Python: &runevidence.PythonEvidence{SlowSamples: 40, SlowLines: []runevidence.Line{{File: "/w/ppo.py", Line: 7, Func: "<module>", Pct: 100,
			Inside: &runevidence.LibraryCall{Package: "stable_baselines3", Func: "collect_rollouts", Via: []string{"learn"}, Pct: 76}}}}},
			"(steps 41, 81, 121, 161, ...): 31% of the run's step time", "the slow steps' time goes to ppo.py:7 100% (in stable_baselines3: learn > collect_rollouts (76%)) (their main-thread samples): that work every 40 steps takes 380 ms each time; make it cheaper", ""},
		// the program's own rollout: its top line calls a model on a
		// vectorized environment's 4 observations (cleanrl's PPO)
		{"slow steps calling a model on a few rows", runevidence.RunEvidence{Periodic: periodic, Models: []rundir.ModelCall{{Class: "Sequential", File: "/w/ppo.py", Line: 126, Input: []int64{4, 4}}},
			Python: &runevidence.PythonEvidence{SlowSamples: 40, SlowLines: []runevidence.Line{{File: "/w/ppo.py", Line: 126, Func: "Agent.get_action_and_value", Pct: 20}, {File: "/w/ppo.py", Line: 207, Func: "<module>", Pct: 12}}}},
			"31% of the run's step time, in a module's forward", "each time, the first line a call of Sequential (ppo.py:126) on an input of [4, 4]; if it calls the model once per item (an RL rollout once per environment step, a sampling loop once per token), give each call more: step more environments together", ""},
		// ... not a batch of 64 (an evaluation's), nor another line's model
		{"slow steps calling a model on a batch", runevidence.RunEvidence{Periodic: periodic, Models: []rundir.ModelCall{{Class: "Net", File: "/w/train.py", Line: 30, Input: []int64{64, 3, 32, 32}}, {Class: "Env", File: "/w/train.py", Line: 99, Input: []int64{1}}},
			Python: &runevidence.PythonEvidence{SlowSamples: 40, SlowLines: slowLines}},
			"(steps 41, 81, 121, 161, ...): 31% of the run's step time", "the slow steps' time goes to train.py:30 60%, train.py:12 25% (their main-thread samples): that work every 40 steps takes 380 ms each time; make it cheaper", ""},
		// ... not from a few samples: record one
		{"few slow samples", runevidence.RunEvidence{Periodic: periodic, Python: &runevidence.PythonEvidence{SlowSamples: 3, SlowLines: slowLines}},
			"(steps 41, 81, 121, 161, ...)", "record one with bottleneck run", ""},
		// silent: the slow steps wait for the DataLoader (its workers
		// deliver a round of batches at once): input, not work every N steps
		{"loader rounds", runevidence.RunEvidence{Periodic: periodic, Python: &runevidence.PythonEvidence{SlowSamples: 40, SlowLines: slowLines, SlowLoaderShare: 0.9}}, "", "", ""},
		// silent: a DataLoader's epochs of 40 batches restart its workers
		{"epochs", runevidence.RunEvidence{Periodic: periodic, Loaders: []runevidence.Loader{{Batches: 280, Iterators: 7, NumWorkers: &two, PersistentWorkers: &no}}}, "", "", ""},
		// the same, the restarts timed: they hold the slow steps' excess
		{"epochs, restarts timed", runevidence.RunEvidence{Periodic: periodic, Loaders: []runevidence.Loader{{Batches: 280, Iterators: 7, NumWorkers: &two, PersistentWorkers: &no, RestartStepsS: 2.4, RestartsTimed: 6}}}, "", "", ""},
		// ... or not: an evaluation at each epoch's end is the work (its
		// period is the epoch's too)
		{"epochs, restarts timed cheap", runevidence.RunEvidence{Periodic: periodic, Loaders: []runevidence.Loader{{Batches: 280, Iterators: 7, NumWorkers: &two, PersistentWorkers: &no, RestartStepsS: 0.6, RestartsTimed: 6}},
			Python: &runevidence.PythonEvidence{OffStepShare: 0.18, OffStep: evalLines}}, "in " + runevidence.OffStepEval, "every 40 steps at train.py:20", ""},
		// but not without workers: the epoch's end (an evaluation) is the work
		{"epochs without workers", runevidence.RunEvidence{Periodic: periodic, Loaders: []runevidence.Loader{{Batches: 280, Iterators: 7, NumWorkers: &zero}},
			Python: &runevidence.PythonEvidence{OffStepShare: 0.18, OffStep: evalLines}}, "in " + runevidence.OffStepEval, "every 40 steps at train.py:20", ""},
		// silent: Lightning's validation phases hold the time (run.validation's)
		{"validation", runevidence.RunEvidence{Periodic: periodic, Phases: &rundir.FrameworkPhases{Framework: "lightning", WallS: 10,
			Phases: []rundir.Phase{{Name: "validation_step", SelfS: 2.5}, {Name: "[Strategy]SingleDeviceStrategy.training_step", Calls: 300}}}}, "", "", ""},
		// silent: Lightning's save_checkpoint phases hold the time (run.checkpoint's)
		{"framework checkpoints", runevidence.RunEvidence{Periodic: periodic, Phases: &rundir.FrameworkPhases{Framework: "lightning", WallS: 10,
			Phases: []rundir.Phase{{Name: "save_checkpoint", Calls: 7, SelfS: 2.6}, {Name: "[Strategy]SingleDeviceStrategy.training_step", Calls: 300}}},
			Python: &runevidence.PythonEvidence{RunIOShare: 0.2, RunIOLines: ioLines}}, "", "", ""},
		// ... but where the saves are under run.checkpoint's share of the
		// wall time, they are this rule's, with the epoch they end
		// (Lightning's DQN template: a save at every 13-step epoch's end,
		// 5% of its wall time, its epochs' boundaries 12% of the step time)
		{"framework checkpoints under their share", runevidence.RunEvidence{Periodic: periodic, Phases: &rundir.FrameworkPhases{Framework: "lightning", WallS: 40,
			Phases: []rundir.Phase{{Name: "save_checkpoint", Calls: 7, SelfS: 1.6}, {Name: "[Strategy]SingleDeviceStrategy.training_step", Calls: 300}}},
			Loaders: []runevidence.Loader{{Batches: 280, Iterators: 7, NumWorkers: &zero}}},
			"(steps 41, 81, 121, 161, ...): 31% of the run's step time, in checkpoint saves", "Lightning's checkpoint saves come every 40 steps and hold 1.60 s of the 2.66 s those steps take above the median over the run: " +
				"7 saves of 229 ms each: save less often (ModelCheckpoint(every_n_epochs=N)", ""},
		// silent: a GAN's generator stepped after every 5 critic steps
		{"two optimizers", runevidence.RunEvidence{Periodic: periodic, Optimizers: []rundir.Optimizer{{Class: "Adam"}, {Class: "Adam"}},
			Python: &runevidence.PythonEvidence{RunIOShare: 0.2, RunIOLines: ioLines}}, "", "", ""},
		// silent: under MinFinding of the run
		{"small", runevidence.RunEvidence{Periodic: runevidence.Periodic(stepsWith(300, every(40, 41, 300, 0.05)), nil)}, "", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := cpuTrace(&c.run)
			d := Compute(in)
			f := findingOf(d, "run.periodic")
			if c.title == "" {
				if f != nil || strings.Contains(d.Verdict.Why, "every 40 steps") {
					t.Fatalf("finding %+v, why %q", f, d.Verdict.Why)
				}
				return
			}
			if f == nil {
				t.Fatalf("no finding: %+v", d.Findings)
			}
			if !strings.Contains(f.Title, c.title) || !strings.Contains(f.AllChanges(), c.change) {
				t.Errorf("title %q\nchange %q", f.Title, f.AllChanges())
			}
			if epoch := strings.Contains(f.AllChanges(), "an epoch is 40 steps"); epoch != (c.name == "framework checkpoints under their share") {
				t.Errorf("the epoch's own work said: %v: %q", epoch, f.AllChanges())
			}
			if !strings.Contains(d.Verdict.Why, "every 40 steps a step takes 400 ms") || d.Verdict.Secondary[len(d.Verdict.Secondary)-1] != Periodic {
				t.Errorf("verdict %+v", d.Verdict)
			}
		})
	}
}

// Slow steps that take more of the run than the window's limiter takes of
// the steps between them make the verdict periodic-work, the limiter
// the first secondary (a PPO loop's rollout every 32 updates: 67% of the
// run, its updates' per-op overhead 73% of the rest); less, and they stay
// a secondary. The finding of the periodic-work that leads the verdict
// leads the findings, though its saving counts in the window's steps.
func TestPeriodicVerdict(t *testing.T) {
	for _, c := range []struct {
		name  string
		slowS float64
		leads bool
	}{{"rollout", 2.0, true}, {"checkpoint", 0.4, false}} {
		t.Run(c.name, func(t *testing.T) {
			run := runevidence.RunEvidence{Periodic: runevidence.Periodic(stepsWith(300, every(40, 41, 300, c.slowS)), nil)}
			d := Compute(cpuTrace(&run))
			v := d.Verdict
			if leads := v.Primary == Periodic; leads != c.leads || len(v.Secondary) == 0 {
				t.Fatalf("share %.2f: verdict %+v", run.Periodic.Share, v)
			}
			if c.leads && (v.Secondary[0] != CPUCompute || !strings.Contains(v.Detail, fmt.Sprintf("every 40 steps a step takes %s", units.Seconds(c.slowS))) ||
				!strings.Contains(v.Why, "between those steps, cpu-compute-bound explains")) {
				t.Errorf("verdict %+v", v)
			}
			if first := d.Findings[0].Rule; c.leads != (first == "run.periodic") {
				t.Errorf("first finding %s: %s", first, d.Findings[0].Title)
			}
		})
	}
}

// The periodic work that leads the verdict leads the findings, though a
// window finding saves more of the window's step (a PPO loop's per-op
// overhead, 54% of its updates' steps, against its rollout, half the
// run); a memory leak still goes first.
func TestPeriodicVerdictLeadsTheFindings(t *testing.T) {
	for _, c := range []struct {
		findings []Finding
		first    string
	}{
		{[]Finding{{Rule: "cpu.tiny-ops", SavingUs: 731}, {Rule: "run.periodic", SavingUs: 606}, {Rule: "host.python", SavingUs: 173}}, "run.periodic"},
		{[]Finding{{Rule: "cpu.tiny-ops", SavingUs: 731}, {Rule: "memory.growth", SavingUs: 10}, {Rule: "run.periodic", SavingUs: 606}}, "memory.growth"},
	} {
		s := &state{d: &Diagnosis{Verdict: Verdict{Primary: Periodic}, Findings: c.findings}}
		s.rank()
		if got := s.d.Findings[0].Rule; got != c.first {
			t.Errorf("first %s, want %s: %+v", got, c.first, s.d.Findings)
		}
	}
}

// The agent's window means leave out the window's steps over twice its
// median, as the trace's analyses do: an evaluation at an epoch's end in
// one window step made the DataLoader wait per step three times the
// trace's.
func TestWindowMeansLeaveOutOutliers(t *testing.T) {
	ev := &rundir.Evidence{}
	for i := 1; i <= 20; i++ {
		d, wait := 0.002, 0.0005
		if i == 12 {
			d, wait = 0.060, 0.020 // the evaluation's 20 batches
		}
		in := i >= 8 && i <= 15
		ev.StepTimes = append(ev.StepTimes, []any{float64(i), float64(i) * 0.01, d, in})
		if in {
			ev.WindowSteps = append(ev.WindowSteps, rundir.WindowStep{Step: i, DurationS: d, DataLoaderWaitS: wait, Syncs: 1})
		}
	}
	r := runevidence.FromProcess(&rundir.ProcessFiles{Tag: "rank0", Evidence: ev})
	if math.Abs(r.WindowStepS-0.002) > 1e-12 || math.Abs(r.DataLoaderWaitS-0.0005) > 1e-12 || r.SyncsPerStep != 1 {
		t.Errorf("window step %v, wait %v, syncs %v: want 2 ms, 0.5 ms, 1", r.WindowStepS, r.DataLoaderWaitS, r.SyncsPerStep)
	}
	// long steps that wait for the DataLoader: a lone one (an epoch's
	// first batch) is left out; every 4th (a round of 4 workers' batches)
	// is the loop's pattern and stays
	for _, c := range []struct {
		name  string
		every int
		want  float64
	}{{"a lone wait", 100, 0.0005}, {"every 4th step", 4, (6*0.0005 + 2*0.040) / 8}} {
		ev := &rundir.Evidence{}
		for i := 1; i <= 20; i++ {
			d, wait := 0.002, 0.0005
			if i%c.every == 0 || c.every == 100 && i == 12 {
				d, wait = 0.0415, 0.040
			}
			in := i >= 8 && i <= 15
			ev.StepTimes = append(ev.StepTimes, []any{float64(i), float64(i) * 0.01, d, in})
			if in {
				ev.WindowSteps = append(ev.WindowSteps, rundir.WindowStep{Step: i, DurationS: d, DataLoaderWaitS: wait})
			}
		}
		if r := runevidence.FromProcess(&rundir.ProcessFiles{Tag: "rank0", Evidence: ev}); math.Abs(r.DataLoaderWaitS-c.want) > 1e-12 {
			t.Errorf("%s: window wait %v, want %v", c.name, r.DataLoaderWaitS, c.want)
		}
	}
}
