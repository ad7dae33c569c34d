package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/ranks"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// WriteRanks renders the ranks side by side.
func WriteRanks(w io.Writer, r *ranks.Result) error {
	fmt.Fprintf(w, "Ranks (%d)  [%s]\n", len(r.Ranks), r.Definition)
	if len(r.Ranks) == 0 {
		_, err := fmt.Fprintln(w, "  no traces")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tsteps\tmean step (us)\tcompute (us)\tcomm (us)\tcomm share\toverlap\tcollectives\tlast to arrive\twait in comm (us)\t")
	for _, k := range r.Ranks {
		mark := ""
		if k.Rank == r.Straggler {
			mark = " *"
		}
		fmt.Fprintf(tw, "%d%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f%%\t%.1f%%\t%d\t%d\t%.1f\t\n", k.Rank, mark, k.Steps, k.MeanStepUs,
			k.ComputeUs, k.CommUs, k.CommPct, k.OverlapPct, k.Collectives, k.LastArrivals, k.CommWaitUs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "  slowest rank %d: mean step %.1f%% above the median (%s)\n", r.SlowestRank, r.ImbalancePct, units.Duration(r.MedianStepUs))
	if r.Straggler >= 0 {
		fmt.Fprintf(w, "  straggler (*): rank %d arrives last at most of %d matched collectives; the others wait for it\n", r.Straggler, r.MatchedCollectives)
	} else {
		fmt.Fprintln(w, "  straggler: none found (needs two or more ranks with matching collectives)")
	}
	if len(r.Steps) > 1 && len(r.Ranks) > 1 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "step\t")
		for _, k := range r.Ranks {
			fmt.Fprintf(tw, "rank %d (us)\t", k.Rank)
		}
		fmt.Fprintln(tw, "slowest\timbalance\t")
		for _, s := range r.Steps {
			fmt.Fprintf(tw, "%d\t", s.Step)
			for _, u := range s.Us {
				if u < 0 {
					fmt.Fprint(tw, "-\t")
				} else {
					fmt.Fprintf(tw, "%.1f\t", u)
				}
			}
			fmt.Fprintf(tw, "%d\t%.1f%%\t\n", s.SlowestRank, s.ImbalancePct)
		}
		return tw.Flush()
	}
	return nil
}
