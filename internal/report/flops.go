package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/flops"
)

// WriteFlops renders achieved FLOP/s.
func WriteFlops(w io.Writer, r *flops.Result) error {
	fmt.Fprintf(w, "FLOPs  [%s]\n", r.Definition)
	if !r.Available {
		_, err := fmt.Fprintln(w, "  no op carries a flops count (record with with_flops=True)")
		return err
	}
	peak := "peak unknown"
	if r.PeakTFLOPS > 0 {
		peak = fmt.Sprintf("%.1f%% of %s peak %.1f", r.PeakPct, r.PeakDtype, r.PeakTFLOPS)
	}
	dev := r.Device
	if dev == "" {
		dev = "unknown device"
	}
	fmt.Fprintf(w, "  %.3g FLOP in %.1f us of device time: %.2f TFLOP/s on %s (%s)\n", r.Flops-r.CPUOnlyFlops, r.DeviceUs, r.TFLOPS, dev, peak)
	if r.CPUOnlyFlops > 0 {
		fmt.Fprintf(w, "  %.3g FLOP in ops without device work (CPU)\n", r.CPUOnlyFlops)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  op\tdtype\tcalls\tGFLOP\tdevice (us)\tTFLOP/s\tof peak")
	for _, o := range r.Ops {
		pk := "-"
		if o.PeakTFLOPS > 0 {
			pk = fmt.Sprintf("%.1f%%", o.PeakPct)
		}
		dt := o.Dtype
		if dt == "" {
			dt = "?"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%.3f\t%.1f\t%.2f\t%s\n", trunc(o.Name, 50), dt, o.Calls, o.Flops/1e9, o.DeviceUs, o.TFLOPS, pk)
	}
	return tw.Flush()
}
