package jobdir

import (
	"fmt"
	"io"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/summary"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// The step-by-rank table is printed for jobs this small; larger ones
// have it in job-report.json.
const (
	tableRanks = 16
	tableSteps = 40
)

// WriteText prints the report. Hosts, paths and problems come from the
// nodes' files: they are escaped.
func WriteText(out io.Writer, rep *Report) error {
	w := &errWriter{w: out}
	nodes := "?"
	if rep.Key.Nodes > 0 {
		nodes = fmt.Sprint(rep.Key.Nodes)
	}
	w.printf("Job report: %d of %s nodes reported", len(rep.Nodes), nodes)
	waiter, where := "node 0", "no record in the job directory"
	if rep.Route == RouteStore {
		waiter, where = "rank 0", "no rank of it reported over torchrun's store"
	}
	if rep.Complete {
		w.printf(" (%s waited %s for the others)\n", waiter, units.Seconds(rep.WaitedS))
	} else {
		w.printf(" (%s stopped waiting after %s)\n", waiter, units.Seconds(rep.WaitedS))
	}
	if rep.Route == RouteStore {
		w.printf("Summaries: sent over torchrun's store to rank 0, laid out in %s\n", textsafe.String(rep.Dir))
	} else {
		w.printf("Job directory: %s\n", textsafe.String(rep.Dir))
	}
	stragglerCause := map[int]string{}
	if rep.Job != nil {
		for _, s := range rep.Job.Stragglers {
			stragglerCause[s.Rank] = StragglerCause(rep.Job, s)
		}
	}
	w.printf("Nodes:\n")
	for _, n := range rep.Nodes {
		name := "node ?"
		if n.Node >= 0 {
			name = fmt.Sprintf("node %d", n.Node)
		}
		if n.Host != "" {
			name += " on " + textsafe.String(n.Host)
		}
		w.printf("  %s: ranks %s", name, Ranges(n.Ranks))
		if len(n.Summarised) != len(n.Ranks) {
			w.printf(" (%d summarised)", len(n.Summarised))
		}
		if n.StepUs > 0 {
			w.printf(", mean step %s", units.Duration(n.StepUs))
		}
		if n.ExitCode >= 0 {
			w.printf(", exit status %d", n.ExitCode)
		} else {
			w.printf(", exit status not known here")
		}
		if len(n.Stragglers) > 0 {
			var parts []string
			for _, r := range n.Stragglers {
				parts = append(parts, fmt.Sprintf("rank %d, %s", r, stragglerCause[r]))
			}
			w.printf("; STRAGGLERS: %s", strings.Join(parts, ", "))
		}
		w.printf("\n    run directory: %s\n", textsafe.String(n.RunDir))
		for _, p := range n.Problems {
			w.printf("    %s\n", textsafe.String(p))
		}
	}
	for _, n := range rep.MissingNodes {
		w.printf("  node %d: NEVER REPORTED (%s after %s): its ranks are missing below\n", n, where, units.Seconds(rep.WaitedS))
	}
	for _, s := range rep.Ignored {
		w.printf("  set aside: %s\n", textsafe.String(s))
	}
	for _, s := range rep.Warnings {
		w.printf("  warning: %s\n", textsafe.String(s))
	}
	w.printf("\n")
	if rep.Job == nil {
		w.printf("No rank summary arrived: nothing to compare.\n")
		return w.err
	}
	if w.err == nil {
		w.err = summary.WriteText(out, rep.Job)
	}
	if s := rep.Series; s != nil && len(s.Ranks) > 1 && len(s.Ranks) <= tableRanks && len(s.Steps) <= tableSteps {
		w.printf("\nStep time per rank (ms), aligned by step number:\n  %6s", "step")
		for _, r := range s.Ranks {
			w.printf(" %8s", fmt.Sprintf("rank %d", r.Rank))
		}
		w.printf("\n")
		for i, num := range s.Steps {
			w.printf("  %6d", num)
			for _, r := range s.Ranks {
				if v := r.StepUs[i]; v != nil {
					w.printf(" %8.1f", float64(*v)/1e3)
				} else {
					w.printf(" %8s", "-")
				}
			}
			w.printf("\n")
		}
	}
	return w.err
}

// StragglerCause is a straggler's cause with the rank's own verdict when
// it has one: on a CPU-only trace there are no kernels, so a slower
// compute path is host time, and the rank's own verdict (cpu-compute-bound)
// tells which host time.
func StragglerCause(rep *summary.Report, s summary.Straggler) string {
	for _, r := range rep.PerRank {
		if r.Rank == s.Rank && r.Verdict != "" {
			return fmt.Sprintf("%s (its own verdict: %s)", s.Cause, r.Verdict)
		}
	}
	return s.Cause
}

// Ranges writes sorted ranks as ranges: 0-3, 8, 10-11.
func Ranges(rs []int) string {
	if len(rs) == 0 {
		return "none"
	}
	var parts []string
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprint(rs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", rs[i], rs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}
