package report

import (
	"fmt"
	"io"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/launch"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// WriteLaunch writes launch statistics, the queue per stream and kernels
// per step.
func WriteLaunch(w io.Writer, r *launch.Result) error {
	fmt.Fprintf(w, "Kernel launches (%s): %d launched, %d short (%s), %d slow calls (>50 µs), %d delays >100 µs\n",
		r.Definition, r.Launched, r.ShortKernels, units.Duration(r.ShortKernelsUs), r.RuntimeOutliers, r.DelayOutliers)
	if r.Launched == 0 {
		return nil
	}
	tw := tabs(w)
	fmt.Fprintln(tw, "\tmean\tp50\tp90\tp99\tmax\t")
	for _, row := range []struct {
		n string
		d launch.Delays
	}{{"launch delay", r.LaunchDelay}, {"launch call", r.LaunchCall}} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", row.n, units.Duration(row.d.MeanUs), units.Duration(row.d.P50Us), units.Duration(row.d.P90Us), units.Duration(row.d.P99Us), units.Duration(row.d.MaxUs))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabs(w)
	fmt.Fprintln(tw, "device\tstream\tmax queue\tqueue full\t")
	for _, q := range r.Queues {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t\n", q.Device, q.Stream, q.Max, units.Duration(q.QueueFullUs))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.PerStep) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabs(w)
	fmt.Fprintln(tw, "step\tkernels\tmemcpy\tmemset\t")
	for _, s := range r.PerStep {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", s.Step, s.Kernels, s.Memcpy, s.Memset)
	}
	return tw.Flush()
}
