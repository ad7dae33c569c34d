package report

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
)

// tabs returns the tabwriter the step-time tables use.
func tabs(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// us formats µs with ms/s units for readability.
func us(v float64) string {
	switch a := max(v, -v); {
	case a >= 1e6:
		return fmt.Sprintf("%.2f s", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.2f ms", v/1e3)
	}
	return fmt.Sprintf("%.1f µs", v)
}

// WriteBreakdown writes the step-time breakdown: the average step by
// category, then one row per step.
func WriteBreakdown(w io.Writer, r *breakdown.Result) error {
	fmt.Fprintf(w, "Step-time breakdown (%s", r.Definition)
	if r.SyntheticStep {
		fmt.Fprint(w, "; no ProfilerStep: the whole trace is one step")
	}
	fmt.Fprintf(w, "), average of %d step(s): %s\n", r.AveragedSteps, us(r.Average.TotalUs))
	tw := tabs(w)
	fmt.Fprintln(tw, "category\ttime\tshare\t")
	cats := []breakdown.Category{breakdown.Kernel, breakdown.Memcpy, breakdown.Memset, breakdown.Communication}
	for _, c := range cats {
		fmt.Fprintf(tw, "%s\t%s\t%.2f%%\t\n", c, us(r.Average.Get(c)), r.Pct(c))
	}
	tbMode := r.Average.RuntimeSyncUs == 0 && r.Average.RuntimeLaunchUs == 0
	if tbMode {
		fmt.Fprintf(tw, "Runtime\t%s\t%.2f%%\t\n", us(r.Average.RuntimeUs), share(r.Average.RuntimeUs, r.Average.TotalUs))
	} else {
		for _, c := range []breakdown.Category{breakdown.RuntimeSync, breakdown.RuntimeLaunch, breakdown.RuntimeOther} {
			fmt.Fprintf(tw, "%s\t%s\t%.2f%%\t\n", c, us(r.Average.Get(c)), r.Pct(c))
		}
	}
	for _, c := range []breakdown.Category{breakdown.DataLoader, breakdown.CPUExec, breakdown.Other} {
		fmt.Fprintf(tw, "%s\t%s\t%.2f%%\t\n", c, us(r.Average.Get(c)), r.Pct(c))
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, us(s.TotalUs), us(s.KernelUs), us(s.MemcpyUs),
			us(s.MemsetUs), us(s.CommunicationUs), us(s.RuntimeUs), us(s.DataLoaderUs), us(s.CPUExecUs), us(s.OtherUs))
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
