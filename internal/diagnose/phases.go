package diagnose

import (
	"fmt"

	"github.com/bottleneck-dev/bottleneck/internal/units"
)

var _ = addRule(Rule{
	ID: "run.validation", Class: Host, Factor: 0.5,
	When:   "framework phases (run: Lightning, Hugging Face Trainer) of a training run: validation and evaluation phases' self time >= ValidationShare of the run's wall time; at stake: their time per training step",
	Change: "validate less often or on fewer batches",
	detect: (*state).validationFinding,
	Fires:  "TestValidationFinding", Silent: "TestValidationFinding",
})

// validationFinding: validation or evaluation takes a large share of a
// training run's wall time (framework phases, whole run): it runs too
// often or on too much data for what it tells.
func (s *state) validationFinding() {
	if s.step <= 0 || !s.validationFires() {
		return // not a training run, or validation in proportion
	}
	fp := s.in.Run.Phases
	valS, loadS, steps := validationTime(fp)
	share := valS / fp.WallS
	perStepUs := valS / float64(steps) * 1e6
	ms := []Evidence{{"validation and evaluation phases' self time, share of the run's wall time", 100 * share, "%", "framework phases"},
		{fmt.Sprintf("validation time per training step (%d steps)", steps), perStepUs, "us", "framework phases"}}
	change := validateLessOften(fp.Framework)
	if fp.Framework == "lightning" && loadS >= valS/2 {
		change = thenDo(change, fmt.Sprintf("give the validation DataLoader workers too: loading its batches is %.0f%% of it (val_next)", 100*loadS/valS))
	}
	s.emit(s.finding("run.validation", fmt.Sprintf("Validation takes %.0f%% of the run's wall time (%s over %d training steps)", 100*share, units.Duration(valS*1e6), steps),
		perStepUs, ms, []Location{{Kind: "phase", Name: "validation", Note: fp.Framework + " phases"}}, change))
}

var _ = addRule(Rule{
	ID: "run.checkpoint", Class: IO, Factor: 0.7,
	When: "framework phases (run: Lightning, Hugging Face Trainer) of a training run: save_checkpoint self time >= MinFinding of the run's wall time; at stake: its time per training step",
	Change: orTry(orTry("save less often",
		"save the weights alone when the optimizer's state is not needed to resume: a smaller file"),
		"write in the background: the step waits only for the copy"),
	detect: (*state).checkpointFinding,
	Fires:  "TestCheckpointFinding", Silent: "TestCheckpointFinding",
})

// checkpointFinding: saving checkpoints takes at least MinFinding of a
// training run's wall time (framework phases, whole run: Lightning's and
// the Trainer's save_checkpoint). A save every N steps is rarely in the
// recorded window: a Lightning run saving every 20 steps spent 39% of
// its wall time there, and its window of 5 steps showed none of it.
func (s *state) checkpointFinding() {
	if s.step <= 0 || !s.checkpointFires() {
		return
	}
	fp := s.in.Run.Phases
	saveS, saves := checkpointTime(fp)
	_, _, steps := validationTime(fp)
	share := saveS / fp.WallS
	perStepUs := saveS / float64(steps) * 1e6
	ms := []Evidence{{"checkpoint saves' self time, share of the run's wall time", 100 * share, "%", "framework phases"},
		{"saves", float64(saves), "", "framework phases"},
		{"time per save", saveS / float64(saves) * 1e6, "us", "framework phases"},
		{fmt.Sprintf("save time per training step (%d steps)", steps), perStepUs, "us", "framework phases"}}
	change := trainerSaveLessOften
	if fp.Framework == "lightning" {
		change = orTry(orTry("save less often (ModelCheckpoint(every_n_train_steps=... larger, or every_n_epochs=1))",
			"save_weights_only=True when the optimizer's state is not needed to resume: a smaller file"),
			"write in the background: Trainer(plugins=[AsyncCheckpointIO()]) (lightning.pytorch.plugins.io)")
	}
	s.emit(s.finding("run.checkpoint", fmt.Sprintf("Saving checkpoints takes %.0f%% of the run's wall time (%d saves, %s each)", 100*share, saves, units.Seconds(saveS/float64(saves))),
		perStepUs, ms, []Location{{Kind: "phase", Name: "save_checkpoint", Note: fp.Framework + " phases"}}, change))
}

// validationFires: a training run's validation phases hold at least
// ValidationShare of its wall time (run.validation).
func (s *state) validationFires() bool {
	r := s.in.Run
	if r == nil || r.Phases == nil || r.Phases.WallS <= 0 {
		return false
	}
	valS, _, steps := validationTime(r.Phases)
	return steps > 0 && valS/r.Phases.WallS >= s.p.ValidationShare
}

// checkpointFires: a training run's checkpoint saves hold at least
// MinFinding of its wall time (run.checkpoint).
func (s *state) checkpointFires() bool {
	r := s.in.Run
	if r == nil || r.Phases == nil || r.Phases.WallS <= 0 {
		return false
	}
	saveS, saves := checkpointTime(r.Phases)
	_, _, steps := validationTime(r.Phases)
	return steps > 0 && saves > 0 && saveS/r.Phases.WallS >= s.p.MinFinding
}

// trainerSaveLessOften is how the Hugging Face Trainer saves checkpoints
// less often (run.checkpoint, run.periodic).
const trainerSaveLessOften = "save less often (TrainingArguments(save_steps=... larger, or save_strategy=\"epoch\")), and save_only_model=True when the optimizer's state is not needed to resume"

// validateLessOften is how a framework's validation runs less often or on
// less data (run.validation, run.periodic).
func validateLessOften(framework string) string {
	if framework == "lightning" {
		return "validate less often (Trainer(val_check_interval=..., check_val_every_n_epoch=...)) or on fewer batches (limit_val_batches)"
	}
	return "evaluate less often (TrainingArguments(eval_steps=..., or eval_strategy=\"epoch\")) or on a subset (eval_dataset.select(range(n))), with a larger per_device_eval_batch_size"
}
