package export

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// markdown: a summary for a pull-request comment: the verdict and findings
// when given, the inputs, and per trace the average step breakdown, GPU
// utilization, blocking syncs, the top operators and kernels and the
// largest GPU idle gaps. Every name is escaped (MarkdownEscape): trace
// names can hold | < > ` * _ [ ] and newlines.

const mdTop = 10

// MarkdownEscape makes s safe inside a Markdown table cell or paragraph:
// HTML is turned into entities, Markdown punctuation is backslash-escaped
// and line breaks become spaces.
func MarkdownEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		case '\\', '`', '*', '_', '[', ']', '|', '#', '~', '!', '(', ')', '{', '}':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			if r < 0x20 || (r >= 0x7f && r < 0xa0) {
				b.WriteByte(' ')
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

func trunc(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// cellName escapes and shortens a name for a table cell.
func cellName(s string) string { return MarkdownEscape(trunc(s, 90)) }

func writeMarkdown(w io.Writer, in *Input, o *Options) error {
	r := in.Report
	if r == nil && in.Python == nil {
		return fmt.Errorf("%w: no trace or Python profile", ErrNoInput)
	}
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p("## bottleneck report\n\n")
	if in.Verdict != "" {
		p("**Verdict:** %s\n\n", MarkdownEscape(in.Verdict))
	}
	if len(in.Findings) > 0 {
		p("### Findings\n\n")
		for _, f := range in.Findings {
			sev := ""
			if f.Severity != "" {
				sev = "**" + MarkdownEscape(f.Severity) + "** "
			}
			p("- %s%s", sev, MarkdownEscape(f.Title))
			if f.Detail != "" {
				p(": %s", MarkdownEscape(f.Detail))
			}
			p("\n")
		}
		p("\n")
	}
	if r != nil {
		p("| input | rank | events | steps | devices |\n|---|---:|---:|---|---|\n")
		for _, inp := range r.Inputs {
			var devs []string
			for _, d := range inp.Devices {
				devs = append(devs, d.Name)
			}
			steps := "none"
			if len(inp.Steps) > 0 {
				steps = fmt.Sprintf("%d-%d", inp.Steps[0], inp.Steps[len(inp.Steps)-1])
			}
			rank := "-"
			if inp.Rank >= 0 {
				rank = fmt.Sprint(inp.Rank)
			}
			p("| %s | %s | %d | %s | %s |\n", cellName(filepath.Base(inp.Path)), rank, inp.Events, steps, cellName(strings.Join(uniq(devs), ", ")))
		}
		p("\n")
		for _, f := range r.Failures {
			p("- unreadable: %s: %s\n", MarkdownEscape(f.Path), MarkdownEscape(f.Error))
		}
		for i := range r.Traces {
			markdownTrace(p, &r.Traces[i], len(r.Traces) > 1)
		}
	}
	if in.Python != nil {
		markdownPython(p, in)
	}
	p("<sub>bottleneck %s</sub>\n", MarkdownEscape(toolVersion(r)))
	return bw.Flush()
}

func toolVersion(r *report.Report) string {
	if r == nil {
		return ""
	}
	return r.Tool
}

func uniq(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func markdownTrace(p func(string, ...any), tr *report.TraceReport, multi bool) {
	if multi {
		rank := "?"
		if tr.Rank >= 0 {
			rank = fmt.Sprint(tr.Rank)
		}
		p("### Rank %s (%s)\n\n", rank, cellName(filepath.Base(tr.Path)))
	} else {
		p("### %s\n\n", cellName(filepath.Base(tr.Path)))
	}
	if b := tr.Breakdown; b != nil && b.Average.TotalUs > 0 {
		p("**Step time** (average of %d steps): %s\n\n| category | time | share |\n|---|---:|---:|\n", b.AveragedSteps, units.Duration(b.Average.TotalUs))
		for c := breakdown.Category(0); c < breakdown.NumCategories; c++ {
			if v := b.Average.Get(c); v > 0 {
				p("| %s | %s | %.1f%% |\n", MarkdownEscape(c.String()), units.Duration(v), b.Pct(c))
			}
		}
		p("\n")
	}
	if g := tr.GPU; g != nil {
		for _, d := range g.Devices {
			p("- GPU %d %s: utilization %.1f%%, kernels %s\n", d.Device, cellName(d.Name), d.UtilizationPct, units.Duration(d.KernelTimeUs))
		}
	}
	if s := tr.Syncs; s != nil && s.Count > 0 {
		p("- blocking syncs: %d, %s blocked", s.Count, units.Duration(s.BlockedUs))
		if len(s.Causes) > 0 {
			c := s.Causes[0]
			p(" (most: `%s` in %s)", strings.ReplaceAll(MarkdownEscape(c.Call), "`", "'"), cellName(c.Op))
		}
		p("\n")
	}
	p("\n")
	if ops := tr.Ops; ops != nil && len(ops.Rows) > 0 {
		p("**Top operators**\n\n| operator | calls | host total | device total |\n|---|---:|---:|---:|\n")
		for i, r := range ops.Rows {
			if i == mdTop {
				break
			}
			p("| %s | %d | %s | %s |\n", cellName(r.Name), r.Calls, units.Duration(r.HostTotalUs), units.Duration(r.DeviceTotalUs))
		}
		p("\n")
	}
	if ks := tr.Kernels; ks != nil && len(ks.Rows) > 0 {
		p("**Top kernels**\n\n| kernel | calls | total | share |\n|---|---:|---:|---:|\n")
		for i, r := range ks.Rows {
			if i == mdTop {
				break
			}
			p("| %s | %d | %s | %.1f%% |\n", cellName(r.Name), r.Calls, units.Duration(r.TotalUs), r.TotalPct)
		}
		p("\n")
	}
	if id := tr.Idle; id != nil && len(id.TopHostWaits) > 0 {
		p("**Largest GPU idle gaps waiting for the host**\n\n| gap | step | next kernel | host was in |\n|---:|---|---|---|\n")
		for i, g := range id.TopHostWaits {
			if i == 5 {
				break
			}
			var ops []string
			for _, f := range g.Ops {
				ops = append(ops, f.Name)
			}
			p("| %s | %s | %s | %s |\n", units.Duration(g.Us), MarkdownEscape(g.Step), cellName(g.Kernel), cellName(strings.Join(ops, " > ")))
		}
		p("\n")
	}
}

func markdownPython(p func(string, ...any), in *Input) {
	top := in.Python.TopSites(pythonTopOptions())
	if len(top.BySelf) == 0 {
		return
	}
	p("**Python: top lines by self time** (main thread, %s)\n\n| line | function | self | share |\n|---|---|---:|---:|\n", in.Python.Profiler)
	for _, s := range top.BySelf {
		p("| %s | %s | %s | %.1f%% |\n", cellName(fmt.Sprintf("%s:%d", s.File, s.Line)), cellName(s.Func), units.Seconds(s.SelfS), s.SelfPct)
	}
	p("\n")
}
