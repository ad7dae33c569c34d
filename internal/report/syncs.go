package report

import (
	"fmt"
	"io"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/syncs"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// WriteSyncs writes blocking syncs: totals, per step, and the causes with
// their call stacks.
func WriteSyncs(w io.Writer, r *syncs.Result) error {
	fmt.Fprintf(w, "Blocking syncs (%s): %d, host blocked %s, device stalled by them %s\n", r.Definition, r.Count, units.Duration(r.BlockedUs), units.Duration(r.StallUs))
	if in := r.Inherited; in != nil {
		fmt.Fprintf(w, "  not counted: %d blocking call(s), %s, waited on device work launched before the capture (it ran until +%s)\n", in.Count, units.Duration(in.BlockedUs), units.Duration(in.UntilUs))
	}
	if r.Count == 0 {
		return nil
	}
	calls := make([]string, 0, len(r.ByCall))
	for c := range r.ByCall {
		calls = append(calls, c)
	}
	slices.Sort(calls)
	for _, c := range calls {
		fmt.Fprintf(w, "  %s ×%d\n", c, r.ByCall[c])
	}
	if len(r.PerStep) > 0 {
		tw := tabs(w)
		fmt.Fprintln(tw, "step\tsyncs\tblocked\tof step\tdevice stalled\t")
		for _, s := range r.PerStep {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%.2f%%\t%s\t\n", s.Step, s.Count, units.Duration(s.BlockedUs), s.Pct, units.Duration(s.StallUs))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "Causes:")
	for _, c := range r.Causes {
		op := orDash(c.Op)
		if c.TopOp != "" {
			op = c.TopOp + " > " + op
		}
		fmt.Fprintf(w, "  %10s  ×%-5d %s via %s (device stalled %s)\n", units.Duration(c.BlockedUs), c.Count, trunc(op, 80), c.Call, units.Duration(c.StallUs))
		for _, f := range c.Stack {
			fmt.Fprintf(w, "      %s\n", trunc(f, 100))
		}
	}
	return nil
}
