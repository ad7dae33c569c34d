package report

import (
	"fmt"
	"io"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/idle"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// WriteIdle writes the idle breakdown per stream and the largest
// host-wait gaps with what the host was doing.
func WriteIdle(w io.Writer, r *idle.Result) error {
	fmt.Fprintf(w, "GPU idle time (%s, kernel wait < %s", r.Definition, units.Duration(r.KernelWaitThresholdUs))
	if r.DroppedLastStep {
		fmt.Fprint(w, ", last step dropped")
	}
	fmt.Fprintln(w, ")")
	if len(r.Streams) == 0 {
		fmt.Fprintln(w, "no device activity in the trace")
		return nil
	}
	tw := tabs(w)
	fmt.Fprintln(tw, "device\tstream\tevents\tidle\thost wait\tkernel wait\tother\t")
	for _, s := range r.Streams {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s (%.0f%%)\t%s (%.0f%%)\t%s (%.0f%%)\t\n", s.Device, s.Stream, s.Events, units.Duration(s.IdleUs),
			units.Duration(s.HostWaitUs), s.HostWaitPct, units.Duration(s.KernelWaitUs), s.KernelWaitPct, units.Duration(s.OtherUs), s.OtherPct)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, g := range r.TopHostWaits {
		if i == 0 {
			fmt.Fprintln(w, "\nLargest host waits (what the launching thread ran meanwhile):")
		}
		step := ""
		if g.Step != "" {
			step = " step " + g.Step
		}
		fmt.Fprintf(w, "%s on device %d stream %d%s before %s (launched by %s)\n", units.Duration(g.Us), g.Device, g.Stream, step,
			trunc(g.Kernel, 60), orDash(g.Launch))
		for _, f := range g.Ops {
			fmt.Fprintf(w, "    %10s  %-15s %s\n", units.Duration(f.Us), f.Kind, trunc(f.Name, 80))
		}
	}
	return nil
}
