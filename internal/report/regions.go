package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/regions"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// MaxModuleRows bounds the module table in text (JSON has all rows).
const MaxModuleRows = 40

// MaxDeviceRegionRows bounds the device-time-per-annotation table in text
// (JSON has all rows).
const MaxDeviceRegionRows = 15

// WriteRegions renders regions, modules and user metadata.
func WriteRegions(w io.Writer, r *regions.Result) error {
	fmt.Fprintf(w, "Regions (user annotations, self time adds up to %s of wall time)  [%s]\n", units.Duration(r.WallUs), r.Definition)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  region\tthread\tcalls\ttotal (us)\tmean (us)\tself (us)\tself share")
	for _, g := range r.Regions {
		th := "main"
		if !g.MainThread {
			th = "other"
		}
		calls := fmt.Sprint(g.Calls)
		mean := fmt.Sprintf("%.1f", g.MeanUs)
		if g.Name == regions.Unannotated {
			calls, mean = "-", "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.1f\t%s\t%.1f\t%.1f%%\n", trunc(g.Name, 60), th, calls, g.TotalUs, mean, g.SelfUs, g.SelfPct)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeDeviceRegions(w, r.DeviceRegions); err != nil {
		return err
	}
	if len(r.Modules) > 0 {
		fmt.Fprintln(w, "Modules (nn.Module, inclusive of children)")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  module\tcalls\thost (us)\tdevice (us)")
		for i, m := range r.Modules {
			if i == MaxModuleRows {
				fmt.Fprintf(tw, "  ... %d more\t\t\t\n", len(r.Modules)-i)
				break
			}
			name := m.Path
			if k := strings.LastIndexByte(name, '.'); k >= 0 {
				name = name[k+1:]
			}
			fmt.Fprintf(tw, "  %s%s\t%d\t%.1f\t%.1f\n", strings.Repeat("  ", m.Depth), trunc(name, 50), m.Calls, m.HostUs, m.DeviceUs)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Metadata) > 0 {
		fmt.Fprintln(w, "User metadata")
		for _, m := range r.Metadata {
			fmt.Fprintf(w, "  %s = %s\n", m.Key, trunc(m.Value, 100))
		}
	}
	return nil
}

// writeDeviceRegions renders the device time per gpu_user_annotation: the
// top rows by device time, the rest summed, and the (unannotated) row.
func writeDeviceRegions(w io.Writer, rows []regions.DeviceRegion) error {
	if len(rows) == 0 {
		return nil
	}
	named, un := rows, []regions.DeviceRegion(nil)
	if last := rows[len(rows)-1]; last.Name == regions.Unannotated {
		named, un = rows[:len(rows)-1], rows[len(rows)-1:]
	}
	fmt.Fprintln(w, "Device time per GPU annotation (gpu_user_annotation; device work goes to the innermost one it overlaps)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  annotation	calls	kernels	device (us)	device share")
	for i, g := range named {
		if i == MaxDeviceRegionRows {
			var rest regions.DeviceRegion
			for _, g := range named[i:] {
				rest.Calls += g.Calls
				rest.Kernels += g.Kernels
				rest.DeviceUs += g.DeviceUs
				rest.DevicePct += g.DevicePct
			}
			fmt.Fprintf(tw, "  ... %d more\t%d\t%d\t%.1f\t%.1f%%\n", len(named)-i, rest.Calls, rest.Kernels, rest.DeviceUs, rest.DevicePct)
			break
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%.1f\t%.1f%%\n", Clip(g.Name, 60), g.Calls, g.Kernels, g.DeviceUs, g.DevicePct)
	}
	for _, g := range un {
		fmt.Fprintf(tw, "  %s\t-\t%d\t%.1f\t%.1f%%\n", g.Name, g.Kernels, g.DeviceUs, g.DevicePct)
	}
	return tw.Flush()
}
