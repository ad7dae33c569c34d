package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/flops"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// WriteFlops renders achieved FLOP/s.
func WriteFlops(w io.Writer, r *flops.Result) error {
	fmt.Fprintf(w, "FLOPs  [%s]\n", r.Definition)
	if !r.Available {
		_, err := fmt.Fprintln(w, "  no matmul/convolution/attention op with a flops count or input shapes (record with record_shapes=True)")
		return err
	}
	peak := "peak unknown"
	peakDtype := r.PeakDtype
	if r.TF32 {
		peakDtype = "tf32" // fp32 faster than the CUDA-core peak
	}
	if r.PeakTFLOPS > 0 {
		peak = fmt.Sprintf("%.1f%% of %s peak %.1f", r.PeakPct, peakDtype, r.PeakTFLOPS)
	}
	dev := r.Device
	if dev == "" {
		dev = "unknown device"
	}
	fmt.Fprintf(w, "  %.3g FLOP in %s of device time: %.2f TFLOP/s on %s (%s)\n", r.Flops-r.CPUOnlyFlops, units.Duration(r.DeviceUs), r.TFLOPS, dev, peak)
	if r.CPUOnlyFlops > 0 {
		fmt.Fprintf(w, "  %.3g FLOP in ops without device work (CPU)\n", r.CPUOnlyFlops)
	}
	if st := r.Step; st != nil {
		mfu := "peak unknown"
		if st.MFUPct > 0 {
			mfu = fmt.Sprintf("MFU %.1f%% of %s peak", st.MFUPct, peakDtype)
		}
		fmt.Fprintf(w, "  per step: %.3g FLOP in %s mean step time (%d steps): %.2f TFLOP/s, %s\n", st.Flops, units.Duration(st.StepUs), st.Steps, st.TFLOPS, mfu)
	}
	if r.BandwidthGBs > 0 && r.PeakTFLOPS > 0 {
		fmt.Fprintf(w, "  roofline: %s peak %.1f TFLOP/s, memory %.0f GB/s, ridge point %.0f FLOP/byte\n", peakDtype, r.PeakTFLOPS, r.BandwidthGBs, r.PeakTFLOPS*1e3/r.BandwidthGBs)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  op\tdtype\tcalls\tGFLOP\tdevice (us)\tTFLOP/s\tof peak\tFLOP/byte\tof roof")
	for _, o := range r.Ops {
		pk := "-"
		if o.PeakTFLOPS > 0 {
			pk = fmt.Sprintf("%.1f%%", o.PeakPct)
		}
		dt := o.Dtype
		if dt == "" {
			dt = "?"
		}
		if o.TF32 {
			dt += " (ran as tf32)"
		}
		ai, roof := "-", "-"
		if o.Intensity > 0 {
			ai = fmt.Sprintf("%.1f", o.Intensity)
		}
		if o.RoofTFLOPS > 0 {
			roof = fmt.Sprintf("%.1f%% (%s bound)", o.RoofPct, o.Bound)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%.3f\t%.1f\t%.2f\t%s\t%s\t%s\n", trunc(o.Name, 50), dt, o.Calls, o.Flops/1e9, o.DeviceUs, o.TFLOPS, pk, ai, roof)
	}
	return tw.Flush()
}
