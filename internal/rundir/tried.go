package rundir

import (
	"encoding/json"
	"path/filepath"

	"github.com/bottleneck-dev/bottleneck/internal/atomicfile"
)

// TriedName is what `run --verify` measured of the changes it tried, each
// in one more run of the program (`<run>-tried-N/`): written into the
// first run's directory, so that its reports show measured beside
// predicted.
const (
	TriedName   = "tried.json"
	TriedFormat = "bottleneck.tried"
)

// Tried is tried.json.
type Tried struct {
	Format  string        `json:"format"`
	Version int           `json:"version"`
	Changes []TriedChange `json:"changes"`
}

// TriedChange is one change tried against the run.
type TriedChange struct {
	// Rule is the finding whose change was tried; Set the change (NAME=VALUE, docs/try.md).
	Rule string            `json:"rule"`
	Set  map[string]string `json:"set"`
	// Args are, instead of Set, the program's own options appended to its
	// arguments (diagnose.OptionTry).
	Args []string `json:"args,omitempty"`
	// Numerics: the change alters the program's numbers (ChangeKind.Numerics),
	// tried because run --verify=numerics asked for it.
	Numerics bool `json:"changes_numerics,omitempty"`
	// Dir is the tried run's directory.
	Dir string `json:"dir"`
	// Error says why the change was not measured (its run failed); the rest is then empty.
	Error string `json:"error,omitempty"`
	// PredictedSavingPct is the finding's predicted saving, PredictedSpeedup
	// the same as a speed-up, PredictedMethod how it was found (replay or share).
	PredictedSavingPct float64 `json:"predicted_saving_pct"`
	PredictedSpeedup   float64 `json:"predicted_speedup"`
	PredictedMethod    string  `json:"predicted_method,omitempty"`
	// MeanBaseUs and MeanNewUs are the compared steps' means; MeanSpeedup
	// their ratio, MeanLow..MeanHigh its 95% interval (0: not known);
	// Significant: the interval excludes 1x.
	MeanBaseUs  float64 `json:"mean_base_us"`
	MeanNewUs   float64 `json:"mean_new_us"`
	MeanSpeedup float64 `json:"mean_speedup"`
	MeanLow     float64 `json:"mean_low"`
	MeanHigh    float64 `json:"mean_high"`
	Significant bool    `json:"significant"`
	// MedianSpeedup is the ratio of the median steps; HostAhead says the
	// host ran ahead of the device, so the medians are the host's alone.
	MedianSpeedup float64 `json:"median_speedup"`
	HostAhead     bool    `json:"host_ahead,omitempty"`
	// Caveat says when the two runs' compared steps are different parts of
	// the program (the first run's reach far past the tried run's).
	Caveat string `json:"caveat,omitempty"`
	// BaseVerdict and NewVerdict are each run's verdict class.
	BaseVerdict string `json:"base_verdict,omitempty"`
	NewVerdict  string `json:"new_verdict,omitempty"`
	// BaseStepsUs and NewStepsUs are the compared steps, in order.
	BaseStepsUs []float64 `json:"base_steps_us,omitempty"`
	NewStepsUs  []float64 `json:"new_steps_us,omitempty"`
	// Work is set when the two runs' steps did different work.
	Work *StepWork `json:"work,omitempty"`
}

// StepWork is what the compared steps of two runs did, in calls of the
// program's models, where the agent counted them and the runs differ:
// a step is then not the same unit in both (an L-BFGS step evaluates
// its closure until its line search ends, which a change to the numerics
// moves; an episode lasts as long as its policy keeps going), and the
// time of a call is what compares.
type StepWork struct {
	// Unit names what was counted ("calls of the model on one sample").
	Unit string `json:"unit"`
	// BasePerStep and NewPerStep are the calls a step, as it is and changed.
	BasePerStep float64 `json:"base_per_step"`
	NewPerStep  float64 `json:"change_per_step"`
	// BaseUs and NewUs are the mean time of a call; Speedup their ratio,
	// Low..High its 95% interval (0: not known), Significant when that
	// excludes 1x.
	BaseUs      float64 `json:"base_us"`
	NewUs       float64 `json:"change_us"`
	Speedup     float64 `json:"speedup"`
	Low         float64 `json:"speedup_low,omitempty"`
	High        float64 `json:"speedup_high,omitempty"`
	Significant bool    `json:"significant,omitempty"`
}

// WriteTried writes tried.json into the run directory dir.
func WriteTried(dir string, changes []TriedChange) error {
	b, err := json.MarshalIndent(Tried{Format: TriedFormat, Version: FormatVersion, Changes: changes}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, TriedName), append(b, '\n'))
}

// ReadTried reads dir's tried.json (an error satisfying NotWritten when
// the run was not verified).
func ReadTried(dir string) (*Tried, error) {
	var t Tried
	if err := readJSON(filepath.Join(dir, TriedName), TriedFormat, &t, &t.Format, &t.Version); err != nil {
		return nil, err
	}
	return &t, nil
}
