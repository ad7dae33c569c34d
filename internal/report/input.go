package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/input"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// WriteInput renders the input-pipeline analysis.
func WriteInput(w io.Writer, r *input.Result) error {
	fmt.Fprintf(w, "Input pipeline (DataLoader __next__)  [%s]\n", r.Definition)
	if r.Calls == 0 {
		_, err := fmt.Fprintln(w, "  no DataLoader __next__ annotations in this trace")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tstep (us)\tcalls\tDataLoader (us)\tof step\tGPU idle (us)\tof DataLoader\t")
	for _, s := range r.Steps {
		fmt.Fprintf(tw, "%d\t%.1f\t%d\t%.1f\t%.1f%%\t%.1f\t%.1f%%\t\n",
			s.Step, s.StepUs, s.Calls, s.DataLoaderUs, s.DataLoaderPct, s.GPUIdleUs, s.GPUIdlePct)
	}
	fmt.Fprintf(tw, "all\t%.1f\t%d\t%.1f\t%.1f%%\t%.1f\t%.1f%%\t\n",
		r.StepUs, r.Calls-r.OutsideSteps, r.DataLoaderUs, r.DataLoaderPct, r.GPUIdleUs, r.GPUIdlePct)
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.OutsideSteps > 0 {
		fmt.Fprintf(w, "  %d call(s) outside steps, %s\n", r.OutsideSteps, units.Duration(r.OutsideStepsUs))
	}
	_, err := fmt.Fprintf(w, "  mean DataLoader wait per step: %s\n", units.Duration(r.MeanDataLoaderUs))
	return err
}
