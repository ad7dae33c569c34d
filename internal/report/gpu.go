package report

import (
	"fmt"
	"io"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/gpu"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

func pctOrDash(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", *p)
}

// WriteGPU writes one block per device: utilization, SM efficiency,
// occupancy, tensor cores, then memcpy by direction.
func WriteGPU(w io.Writer, r *gpu.Result) error {
	fmt.Fprintf(w, "GPU (%s), window %s\n", r.Definition, units.Duration(r.WindowUs))
	if len(r.Devices) == 0 {
		fmt.Fprintln(w, "no device activity in the trace")
		return nil
	}
	tw := tabs(w)
	fmt.Fprintln(tw, "device\tname\tkernels\tkernel time\tutilization\tSM efficiency\toccupancy\ttensor cores\t")
	for _, d := range r.Devices {
		name := d.Name
		if name == "" {
			name = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%.2f%%\t%s\t%s\t%.2f%%\t\n", d.Device, name, d.KernelCount, units.Duration(d.KernelTimeUs),
			d.UtilizationPct, pctOrDash(d.SMEfficiencyPct), pctOrDash(d.OccupancyPct), d.TensorCorePct)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeFamilies(w, r); err != nil {
		return err
	}
	any := false
	for _, d := range r.Devices {
		if len(d.Memcpy) > 0 {
			any = true
		}
	}
	if !any {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabs(w)
	fmt.Fprintln(tw, "device\tmemcpy\thost memory\tcount\tbytes\ttime\tbandwidth\t")
	for _, d := range r.Devices {
		for _, m := range d.Memcpy {
			host := m.HostMemory
			if host == "" {
				host = "-"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%.2f GB/s\t\n", d.Device, m.Direction, host, m.Count,
				units.Bytes(m.Bytes), units.Duration(m.TimeUs), m.BandwidthGBps)
		}
	}
	return tw.Flush()
}

// writeFamilies lists each device's kernel time by family, math unit and
// precision (rows under 1% of the kernel time are summed into one).
func writeFamilies(w io.Writer, r *gpu.Result) error {
	fmt.Fprintln(w)
	tw := tabs(w)
	fmt.Fprintln(tw, "device\tkernel family\tunit\tprecision\tkernels\ttime\tof kernel time\t")
	for _, d := range r.Devices {
		var rest gpu.FamilyTime
		for _, f := range d.Families {
			if f.Pct < 1 {
				rest.Kernels += f.Kernels
				rest.TimeUs += f.TimeUs
				rest.Pct += f.Pct
				continue
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%.2f%%\t\n", d.Device, f.Family, dash(f.Unit), dash(f.Precision), f.Kernels, units.Duration(f.TimeUs), f.Pct)
		}
		if rest.Kernels > 0 {
			fmt.Fprintf(tw, "%d\t(others, each < 1%%)\t-\t-\t%d\t%s\t%.2f%%\t\n", d.Device, rest.Kernels, units.Duration(rest.TimeUs), rest.Pct)
		}
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
