package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// writeReadLine says how much was read and how fast.
func writeReadLine(w io.Writer, r *Report) {
	mbps := 0.0
	if r.ReadSeconds > 0 {
		mbps = float64(r.BytesRead) / 1e6 / r.ReadSeconds
	}
	fmt.Fprintf(w, "Read %d trace file(s): %s uncompressed in %s (%.0f MB/s)\n",
		len(r.Inputs), units.Bytes(r.BytesRead), units.Seconds(r.ReadSeconds), mbps)
}

// WriteInputs prints what was read: files, ranks, devices, span, steps,
// events per category and every problem.
func WriteInputs(w io.Writer, r *Report) {
	writeReadLine(w, r)
	for _, in := range r.Inputs {
		rank := "rank ?"
		if in.Rank >= 0 {
			rank = fmt.Sprintf("rank %d", in.Rank)
		}
		fmt.Fprintf(w, "\n%s  %s\n", rank, textsafe.String(in.Path))
		fmt.Fprintf(w, "  %s events, span %s", units.Count(in.Events), units.Duration(in.SpanUs))
		switch {
		case in.SyntheticStep:
			fmt.Fprintf(w, ", no ProfilerStep: the whole trace is one step")
		case in.StepMarks != "":
			fmt.Fprintf(w, ", no ProfilerStep: %d iteration(s) %s, each from one %s to the next", len(in.Steps), stepRange(in.Steps), textsafe.String(in.StepMarks))
		default:
			fmt.Fprintf(w, ", %d step(s) %s", len(in.Steps), stepRange(in.Steps))
		}
		if in.Legacy {
			fmt.Fprintf(w, ", legacy autograd-profiler export")
		}
		fmt.Fprintln(w)
		if d := in.Distributed; d != nil {
			fmt.Fprintf(w, "  distributed: backend %s, rank %d of %d\n", orDash(d.Backend), d.Rank, d.WorldSize)
		}
		writeDevices(w, in.Devices)
		var parts []string
		for _, k := range trace.Kinds() {
			if n := in.EventsByKind[k.String()]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %s", k, units.Count(n)))
			}
		}
		if in.Flows > 0 {
			parts = append(parts, "flows "+units.Count(in.Flows))
		}
		fmt.Fprintf(w, "  events: %s\n", strings.Join(parts, ", "))
		for _, p := range in.Problems {
			fmt.Fprintf(w, "  problem: %s\n", problemText(p))
		}
	}
	for _, f := range r.Skipped {
		fmt.Fprintf(w, "skipped %s: %s\n", f.Path, f.Error)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "could not read %s: %s\n", f.Path, f.Error)
	}
}

func problemText(p Problem) string {
	s := fmt.Sprintf("byte %d: %s", p.Offset, p.What)
	if p.Detail != "" {
		s += " (" + p.Detail + ")"
	}
	if p.Count > 1 {
		s += fmt.Sprintf(" [%d times]", p.Count)
	}
	return s
}

func stepRange(steps []int) string {
	if len(steps) == 0 {
		return ""
	}
	if len(steps) == 1 {
		return fmt.Sprintf("(#%d)", steps[0])
	}
	return fmt.Sprintf("(#%d-#%d)", steps[0], steps[len(steps)-1])
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteOps prints the operator table.
func WriteOps(w io.Writer, t *optable.OpTable) {
	fmt.Fprintf(w, "Operators (%d of %d rows, sorted by %s; device time = kernels, memcpy, memset the op launched)\n",
		len(t.Rows), t.TotalRows, t.SortBy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "calls\thost self\t%\thost total\t%\tdevice self\t%\tdevice total\t%\t name")
	for _, r := range t.Rows {
		name := Clip(r.Name, 60)
		if r.InputDims != "" {
			name += " " + Clip(r.InputDims, 60)
		}
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%s\t%.1f\t%s\t%.1f\t%s\t%.1f\t %s\n",
			r.Calls, units.Duration(r.HostSelfUs), r.HostSelfPct, units.Duration(r.HostTotalUs), r.HostTotalPct,
			units.Duration(r.DeviceSelfUs), r.DeviceSelfPct, units.Duration(r.DeviceTotalUs), r.DeviceTotalPct, name)
		if r.Stack != "" {
			fmt.Fprintf(tw, "\t\t\t\t\t\t\t\t\t   at %s\n", Clip(r.Stack, 160))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "Sum of host self time %s, of device self time %s\n", units.Duration(t.HostSelfUs), units.Duration(t.DevSelfUs))
	if len(t.Dtypes) > 0 {
		var parts []string
		for _, d := range t.Dtypes {
			parts = append(parts, fmt.Sprintf("%s %s host, %s device (%s)", d.Dtype, units.Duration(d.HostSelfUs), units.Duration(d.DeviceSelfUs), units.Things(d.Calls, "call")))
		}
		fmt.Fprintf(w, "By input dtype (the first floating input of each op): %s\n", strings.Join(parts, "; "))
	}
}

// WriteKernels prints the kernel table.
func WriteKernels(w io.Writer, t *optable.KernelTable) {
	if t.TotalRows == 0 {
		fmt.Fprintln(w, "Kernels: none in this trace")
		return
	}
	fmt.Fprintf(w, "Kernels (%d of %d, total %s)\n", len(t.Rows), t.TotalRows, units.Duration(t.TotalUs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "calls\ttotal\t%\tmean\tmin\tmax\tblocks/SM\toccupancy %\tlaunched mostly by\t name")
	for _, r := range t.Rows {
		top := r.TopOp
		if top != "" {
			top = fmt.Sprintf("%s %.0f%%", Clip(top, 32), r.TopOpPct)
		}
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t %s\n",
			r.Calls, units.Duration(r.TotalUs), r.TotalPct, units.Duration(r.MeanUs), units.Duration(r.MinUs), units.Duration(r.MaxUs),
			optional(r.BlocksPerSM, "%.2f"), optional(r.OccupancyPct, "%.1f"), top, Clip(r.Name, 90))
	}
	tw.Flush()
}

func optional(v float64, f string) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf(f, v)
}

// writeDevices lists devices, folding runs of identical ones ("devices
// 0-7: ...") as 8-GPU machines would otherwise fill the screen.
func writeDevices(w io.Writer, devs []trace.Device) {
	for i := 0; i < len(devs); {
		d := devs[i]
		j := i + 1
		for j < len(devs) && devs[j].ID == devs[j-1].ID+1 && sameModel(devs[j], d) {
			j++
		}
		ids := fmt.Sprintf("device %d", d.ID)
		if j-i > 1 {
			ids = fmt.Sprintf("devices %d-%d", d.ID, devs[j-1].ID)
		}
		fmt.Fprintf(w, "  %s: %s, %s, compute capability %d.%d, %d SMs\n",
			ids, textsafe.String(d.Name), units.Bytes(d.TotalGlobalMem), d.ComputeMajor, d.ComputeMinor, d.NumSMs)
		i = j
	}
}

func sameModel(a, b trace.Device) bool {
	a.ID, b.ID = 0, 0
	return a == b
}
