package summary

import (
	"fmt"
	"io"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// WriteText prints the job report for a terminal. Host and file names
// come from the summaries (and so from traces): they are escaped.
func WriteText(out io.Writer, rep *Report) error {
	w := &errWriter{w: out}
	d := rep.Diagnosis
	w.printf("Job of %d ranks", rep.Ranks)
	if rep.Hosts > 0 {
		w.printf(" on %d hosts", rep.Hosts)
	}
	share := ""
	if d.Verdict.SharePct > 0 {
		share = fmt.Sprintf(", %.0f%% of the step", d.Verdict.SharePct)
	}
	w.printf(": %s (%s%s; confidence %s)\n", strings.ToUpper(string(d.Verdict.Primary)), textsafe.String(d.Verdict.Detail), share, d.Verdict.Confidence)
	if d.Verdict.Why != "" {
		w.printf("  %s\n", textsafe.String(d.Verdict.Why))
	}
	if rep.WorldSize > 0 {
		if len(rep.Missing) == 0 {
			w.printf("All %d ranks of the world reported.\n", rep.WorldSize)
		} else {
			var parts []string
			n := 0
			for _, r := range rep.Missing {
				n += r.To - r.From + 1
				if r.From == r.To {
					parts = append(parts, fmt.Sprint(r.From))
				} else {
					parts = append(parts, fmt.Sprintf("%d-%d", r.From, r.To))
				}
			}
			w.printf("MISSING: %d of %d ranks sent no summary: %s\n", n, rep.WorldSize, strings.Join(parts, ", "))
		}
	}
	if rep.Ranks > 0 {
		s := rep.StepUs
		w.printf("Mean step per rank: min %s, median %s, p90 %s, p99 %s, max %s (%d step numbers, %d on every rank, %d with collectives on every rank)\n",
			units.Duration(s.Min), units.Duration(s.P50), units.Duration(s.P90), units.Duration(s.P99), units.Duration(s.Max),
			rep.Steps, rep.StepsCompared, rep.MatchedSteps)
	}
	if len(rep.Stragglers) > 0 {
		w.printf("Stragglers (%d):\n", len(rep.Stragglers))
		for i, s := range rep.Stragglers {
			if i == 20 {
				w.printf("  ... and %d more (--json lists them all)\n", len(rep.Stragglers)-i)
				break
			}
			host := ""
			if s.Host != "" {
				host = " on " + textsafe.String(s.Host)
			}
			z := ""
			if s.Z > 0 {
				z = fmt.Sprintf(", %.0f robust SDs", s.Z)
			}
			w.printf("  rank %d%s: %s, %s (%.1f%%) per step over the median rank%s [%s]\n", s.Rank, host, causeWords[s.Cause],
				units.Duration(s.ExcessUs), s.ExcessPct, z, s.By)
		}
	} else {
		w.printf("Stragglers: none")
		if !rep.Detector.Ran && rep.Detector.Why != "" {
			w.printf(" (%s)", rep.Detector.Why)
		}
		w.printf("\n")
	}
	if len(rep.SlowHosts) > 0 {
		w.printf("Hosts with stragglers:\n")
		for i, h := range rep.SlowHosts {
			if i == 10 {
				break
			}
			w.printf("  %s: %d of its %d ranks, mean step %s\n", textsafe.String(h.Host), h.Stragglers, h.Ranks, units.Duration(h.StepUs))
		}
	}
	if len(rep.Slowest) > 0 {
		w.printf("Slowest ranks (mean step; wait for others; data, host, kernels, own communication):\n")
		for _, r := range rep.Slowest[:min(5, len(rep.Slowest))] {
			w.printf("  rank %d: %s; wait %s; %s, %s, %s, %s\n", r.Rank, units.Duration(r.StepUs), units.Duration(r.WaitUs),
				units.Duration(r.DataUs), units.Duration(r.HostUs), units.Duration(r.KernelUs), units.Duration(r.LinkUs))
		}
	}
	return w.err
}

var causeWords = map[string]string{
	CauseCompute: "its own compute (kernels) is slower",
	CauseData:    "it waits longer for its data",
	CauseHost:    "its host (Python, framework, launches) is slower",
	CauseLink:    "its communication (link) is slower",
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
