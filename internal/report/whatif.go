package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/whatif"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// WriteWhatIf renders the replay of the steps and each fix's prediction.
func WriteWhatIf(w io.Writer, r *whatif.Result) error {
	fmt.Fprintf(w, "What-if replay  [%s]\n", r.Definition)
	if r.Error != "" {
		_, err := fmt.Fprintf(w, "  %s: savings are shares × factors\n", r.Error)
		return err
	}
	fmt.Fprintf(w, "  steps %s replayed: measured %s a step, unchanged replay %s (%.1f%% off); %d device tasks, %.1f host waits on the device a step\n",
		stepList(r.Steps), units.Duration(r.MeasuredUs), units.Duration(r.BaselineUs), r.BaselineErrorPct, r.DeviceTasks, r.Waits)
	var host []string
	for _, c := range whatif.CategoryNames {
		host = append(host, fmt.Sprintf("%s %s", c, units.Duration(r.HostUs[c])))
	}
	fmt.Fprintf(w, "  host time a step: %s\n", strings.Join(host, ", "))
	if r.Base != "" {
		fmt.Fprintf(w, "  baseline %s: %s\n", units.Duration(r.BaselineUs), r.Base)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  fix\tstep\tsaves\ttaken out\treach\ttransformation")
	for _, p := range r.Predictions {
		fmt.Fprintf(tw, "  %s\t%s\t%.1f%%\t%.1f%%\t%.0f%%\t%s\n", p.Fix, units.Duration(p.StepUs), p.SavingPct, p.RemovedPct, p.ReachPct, trunc(p.What, 90))
	}
	return tw.Flush()
}
