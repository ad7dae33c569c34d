package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/memory"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

func stepLabel(n int) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// WriteMemory renders the memory analysis (the timeline is left to JSON).
func WriteMemory(w io.Writer, r *memory.Result) error {
	fmt.Fprintf(w, "Memory  [%s]\n", r.Definition)
	if r.Events == 0 {
		_, err := fmt.Fprintln(w, "  no [memory] events (record with profile_memory=True)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "device\tevents\tallocs\tpeak allocated\tof device\tat (us)\tstep\tpeak reserved\tof device\tstep\tfinal allocated\t")
	for _, d := range r.Devices {
		pa, pr := "-", "-"
		if d.TotalBytes > 0 {
			pa, pr = fmt.Sprintf("%.1f%%", d.PeakAllocatedPct), fmt.Sprintf("%.1f%%", d.PeakReservedPct)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t\n", d.Device, d.Events, d.Allocs,
			units.Bytes(d.PeakAllocatedBytes), pa, d.PeakAllocatedUs, stepLabel(d.PeakAllocatedStep),
			units.Bytes(d.PeakReservedBytes), pr, stepLabel(d.PeakReservedStep), units.Bytes(d.FinalAllocated))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.TopOps) == 0 {
		return nil
	}
	fmt.Fprintln(w, "  ops allocating most:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  op\tdevice\tallocs\tallocated\tlargest")
	for _, o := range r.TopOps {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\n", trunc(o.Name, 60), o.Device, o.Allocs, units.Bytes(o.AllocBytes), units.Bytes(o.LargestBytes))
	}
	return tw.Flush()
}
