package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/critpath"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// WriteCritPath renders the critical path of one step or annotation.
func WriteCritPath(w io.Writer, r *critpath.Result) error {
	what := r.Annotation
	if what == "" {
		what = "whole trace"
	}
	fmt.Fprintf(w, "Critical path: %s, instance %d  [%s]\n", what, r.Instance, r.Definition)
	if r.Error != "" {
		_, err := fmt.Fprintf(w, "  %s\n", r.Error)
		return err
	}
	fmt.Fprintf(w, "  window %s, path %s over %d nodes (graph: %d nodes, %d edges); bound by %s\n",
		units.Duration(r.WindowUs), units.Duration(r.LengthUs), r.PathNodes, r.GraphNodes, r.GraphEdges, r.BoundBy)
	if host := r.SyncEdges - r.GPUWaits; host > 0 {
		fmt.Fprintf(w, "  the host waits for the device %d time(s) along the path\n", host)
	}
	if r.GPUWaits > 0 {
		fmt.Fprintf(w, "  a stream waits for another stream's event %d time(s) along the path\n", r.GPUWaits)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  category\ttime (us)\tshare")
	for _, s := range r.Breakdown {
		fmt.Fprintf(tw, "  %s\t%.1f\t%.1f%%\n", s.Category, s.Us, s.Pct)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Top) > 0 {
		fmt.Fprintln(w, "  top events on the path:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  name\tkind\tcategory\tedges\ttime (us)\tshare")
		for _, it := range r.Top {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%.1f\t%.1f%%\n", trunc(it.Name, 70), it.Kind, it.Category, it.Edges, it.Us, it.Pct)
		}
		return tw.Flush()
	}
	return nil
}

// trunc shortens s to n runes with an ellipsis.
func trunc(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
