package export

import (
	"fmt"

	"strconv"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/report"
)

type reportTrace struct{ report.TraceReport }

// stepCosts returns step num's breakdown, or nil.
func (r *reportTrace) stepCosts(num int) *breakdown.Costs {
	if r == nil || r.Breakdown == nil {
		return nil
	}
	name := strconv.Itoa(num)
	for i := range r.Breakdown.Steps {
		if r.Breakdown.Steps[i].Name == name {
			return &r.Breakdown.Steps[i].Costs
		}
	}
	return nil
}

func pythonTopOptions() pyprofile.Options {
	return pyprofile.Options{Role: "main", Attribution: pyprofile.User, N: mdTop}
}

// FromDiagnosis turns the diagnosis of trace ti in r (when the report has
// one) into the verdict and findings the exports draw. Findings have no
// place on the timeline (StartNs -1).
func FromDiagnosis(r *report.Report, ti int) (string, []Finding) {
	if r == nil || ti < 0 || ti >= len(r.Traces) || r.Traces[ti].Diagnosis == nil {
		return "", nil
	}
	d := r.Traces[ti].Diagnosis
	verdict := fmt.Sprint(d.Verdict.Primary)
	if d.Verdict.Detail != "" {
		verdict += ": " + d.Verdict.Detail
	}
	if d.Verdict.Confidence != "" {
		verdict += fmt.Sprintf(" (%s confidence)", d.Verdict.Confidence)
	}
	var out []Finding
	for _, f := range d.Findings {
		detail := f.AllChanges()
		if f.SavingPct > 0 {
			detail = fmt.Sprintf("%s (could save ~%.0f%% of the step)", detail, f.SavingPct)
		}
		out = append(out, Finding{Severity: f.Confidence, Title: f.Title, Detail: detail, StartNs: -1})
	}
	return verdict, out
}
