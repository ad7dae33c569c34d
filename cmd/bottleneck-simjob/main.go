// Command bottleneck-simjob writes the rank summaries of a simulated job
// (internal/summary/simgen), one file per rank, to try `bottleneck merge`
// at scale:
//
//	bottleneck-simjob -ranks 1000 -steps 1000 -straggler 17:data:10 -o /tmp/job
//	bottleneck merge /tmp/job/*.summary.json
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/summary"
	"github.com/bottleneck-dev/bottleneck/internal/summary/simgen"
)

func main() {
	job := simgen.Job{}
	var out string
	flag.IntVar(&job.Ranks, "ranks", 1000, "ranks")
	flag.IntVar(&job.Steps, "steps", 1000, "steps per rank")
	flag.IntVar(&job.RanksPerHost, "ranks-per-host", 8, "ranks per host")
	flag.Uint64Var(&job.Seed, "seed", 1, "random seed")
	flag.StringVar(&out, "o", "", "output directory (required)")
	flag.Func("straggler", "RANK:KIND:PCT, KIND one of compute, data, host, link; PCT of the step (repeatable)", func(s string) error {
		parts := strings.Split(s, ":")
		if len(parts) != 3 || !slices.Contains(simgen.Kinds, parts[1]) {
			return fmt.Errorf("want RANK:KIND:PCT with KIND one of %s", strings.Join(simgen.Kinds, ", "))
		}
		r, err1 := strconv.Atoi(parts[0])
		p, err2 := strconv.ParseFloat(parts[2], 64)
		if err1 != nil || err2 != nil || r < 0 || p < 0 {
			return fmt.Errorf("bad rank or strength in %q", s)
		}
		job.Stragglers = append(job.Stragglers, simgen.Straggler{Rank: r, Kind: parts[1], StrengthPct: p})
		return nil
	})
	flag.Parse()
	if out == "" || job.Ranks <= 0 || job.Steps <= 0 {
		fmt.Fprintln(os.Stderr, "bottleneck-simjob: -o DIR, -ranks > 0 and -steps > 0 are required")
		os.Exit(2)
	}
	for _, s := range job.Stragglers {
		if s.Rank >= job.Ranks {
			fmt.Fprintf(os.Stderr, "bottleneck-simjob: straggler rank %d >= -ranks %d\n", s.Rank, job.Ranks)
			os.Exit(2)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bottleneck-simjob:", err)
		os.Exit(1)
	}
	for _, s := range simgen.Generate(job) {
		var buf bytes.Buffer
		err := summary.Write(&buf, s)
		if err == nil {
			err = os.WriteFile(filepath.Join(out, fmt.Sprintf("rank%d.summary.json", s.Rank)), buf.Bytes(), 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bottleneck-simjob:", err)
			os.Exit(1)
		}
	}
}
