package report

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// tabs returns the tabwriter the step-time tables use.
func tabs(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// WriteBreakdown writes the step-time breakdown: the average step by
// category, then one row per step.
func WriteBreakdown(w io.Writer, r *breakdown.Result) error {
	fmt.Fprintf(w, "Step-time breakdown (%s", r.Definition)
	if r.SyntheticStep {
		fmt.Fprint(w, "; no ProfilerStep: the whole trace is one step")
	}
	fmt.Fprintf(w, "), average of %d step(s): %s\n", r.AveragedSteps, units.Duration(r.Average.TotalUs))
	tw := tabs(w)
	fmt.Fprintln(tw, "category\ttime\tshare\t")
	cats := []breakdown.Category{breakdown.Kernel, breakdown.Memcpy, breakdown.Memset, breakdown.Communication}
	for _, c := range cats {
		fmt.Fprintf(tw, "%s\t%s\t%.2f%%\t\n", c, units.Duration(r.Average.Get(c)), r.Pct(c))
	}
	tbMode := r.Average.RuntimeSyncUs == 0 && r.Average.RuntimeLaunchUs == 0
	if tbMode {
		fmt.Fprintf(tw, "Runtime\t%s\t%.2f%%\t\n", units.Duration(r.Average.RuntimeUs), share(r.Average.RuntimeUs, r.Average.TotalUs))
	} else {
		for _, c := range []breakdown.Category{breakdown.RuntimeSync, breakdown.RuntimeLaunch, breakdown.RuntimeOther} {
			fmt.Fprintf(tw, "%s\t%s\t%.2f%%\t\n", c, units.Duration(r.Average.Get(c)), r.Pct(c))
		}
	}
	for _, c := range []breakdown.Category{breakdown.DataLoader, breakdown.CPUExec, breakdown.Other} {
		fmt.Fprintf(tw, "%s\t%s\t%.2f%%\t\n", c, units.Duration(r.Average.Get(c)), r.Pct(c))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabs(w)
	fmt.Fprintln(tw, "step\ttotal\tkernel\tmemcpy\tmemset\tcomm\truntime\tdataloader\tcpu exec\tother\t")
	for _, s := range r.Steps {
		name := s.Name
		switch {
		case s.Incomplete:
			name += "*"
		case s.Excluded:
			name += "†"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, units.Duration(s.TotalUs), units.Duration(s.KernelUs), units.Duration(s.MemcpyUs),
			units.Duration(s.MemsetUs), units.Duration(s.CommunicationUs), units.Duration(s.RuntimeUs), units.Duration(s.DataLoaderUs), units.Duration(s.CPUExecUs), units.Duration(s.OtherUs))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if slices.ContainsFunc(r.Steps, func(s breakdown.Step) bool { return s.Incomplete }) {
		fmt.Fprintln(w, "* incomplete (device work cut off by the end of the capture): not averaged")
	}
	if slices.ContainsFunc(r.Steps, func(s breakdown.Step) bool { return s.Excluded }) {
		fmt.Fprintln(w, "† not steady state (start-up, carry-over, graph capture or an outlier; see the verdict's window line): not averaged")
	}
	return nil
}

func share(v, total float64) float64 {
	if total <= 0 {
		return 0
	}
	return 100 * v / total
}
