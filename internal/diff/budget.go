package diff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// Budget is a budget file for `bottleneck check` (docs/diff.md,
// "Absolute budgets"):
//
//	fail_if = ["step_time > 50ms", "peak_memory > 20GiB", "syncs > 2"]
//	forbid_verdicts = ["input-bound", "sync-bound"]
type Budget struct {
	FailIf         []string `toml:"fail_if"`
	ForbidVerdicts []string `toml:"forbid_verdicts"`
	rules          []Rule
}

// CheckSchema names the JSON form of a Checked.
const CheckSchema = "bottleneck.check/v1"

// Checked is one run held against a budget.
type Checked struct {
	Schema string      `json:"schema"`
	Run    SideSummary `json:"run"`
	// Values are the run's metrics (the names of --fail-if).
	Values map[string]float64 `json:"metrics"`
	Gate   []GateOutcome      `json:"gate"`
	Failed bool               `json:"failed"`
}

// ReadBudget reads and checks a budget file: unknown keys, relative rules
// (a budget has no base run) and expressions that do not parse are errors
// naming the file.
func ReadBudget(path string) (*Budget, error) {
	var b Budget
	md, err := toml.DecodeFile(path, &b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if extra := md.Undecoded(); len(extra) > 0 {
		return nil, fmt.Errorf("%s: unknown key %q (want fail_if, forbid_verdicts)", path, extra[0].String())
	}
	for _, s := range b.FailIf {
		r, err := ParseRule(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r.Relative || r.Verdict {
			return nil, fmt.Errorf("%s: %q compares with a base run: a budget holds absolute values (e.g. 'step_time > 50ms')", path, s)
		}
		b.rules = append(b.rules, r)
	}
	if len(b.rules) == 0 && len(b.ForbidVerdicts) == 0 {
		return nil, fmt.Errorf("%s: no budget (want fail_if or forbid_verdicts)", path)
	}
	return &b, nil
}

// Check holds s against b.
func (b *Budget) Check(s *Side) *Checked {
	d := summarise(s)
	c := &Checked{Schema: CheckSchema, Run: d.summary, Values: values(d)}
	for _, r := range b.rules {
		o := GateOutcome{Rule: r.Text}
		if v, ok := c.Values[r.Metric]; ok {
			o.Failed, o.Why = r.checkValue(v)
		} else {
			o.Why = r.Metric + " was not measured in this run"
		}
		c.Gate = append(c.Gate, o)
	}
	if len(b.ForbidVerdicts) > 0 {
		o := GateOutcome{Rule: "verdict not in " + strings.Join(b.ForbidVerdicts, ", "), Why: "verdict " + d.summary.Verdict}
		o.Failed = slices.Contains(b.ForbidVerdicts, d.summary.Verdict)
		c.Gate = append(c.Gate, o)
	}
	for _, o := range c.Gate {
		c.Failed = c.Failed || o.Failed
	}
	return c
}
