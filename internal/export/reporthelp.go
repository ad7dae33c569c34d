package export

import (
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
