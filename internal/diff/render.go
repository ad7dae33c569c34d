package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r for a terminal.
func WriteText(w io.Writer, r *Result) error {
	ew := &errWriter{w: w}
	p := ew.printf
	p("%s\n", r.Headline.Summary)
	for _, c := range r.Headline.Causes {
		p("  %s\n", c)
	}
	p("  %s\n", verdictLine(r))
	for i, s := range []SideSummary{r.Base, r.New} {
		p("  %-4s %s (%s, %d trace(s)%s): median step %s over %d steps from %s\n", [2]string{"base", "new"}[i], report.Printable(s.Label), s.Kind, s.Traces,
			devices(s), units.Duration(s.MedianUs), s.Steps, s.StepSource)
	}
	for _, wn := range r.Warnings {
		p("  warning: %s\n", wn)
	}
	if len(r.Breakdown) > 0 {
		p("\nWhere the step time went (mean step of the traces: %s -> %s)\n", units.Duration(r.Base.TraceStepUs), units.Duration(r.New.TraceStepUs))
		p("  %-20s %10s %10s %11s %9s %8s\n", "category", "base", "new", "change", "share", "of change")
		for _, d := range r.Breakdown {
			p("  %-20s %10s %10s %11s %4.0f%%>%2.0f%% %7.0f%%\n", d.Category, units.Duration(d.BaseUs), units.Duration(d.NewUs), signed(d.DeltaUs), d.BasePct, d.NewPct, d.SharePct)
		}
	}
	itemsText(ew, "Kernels", r.Kernels, devicesDiffer(r))
	itemsText(ew, "Operators", r.Ops, false)
	if len(r.Lines) > 0 {
		p("\nPython lines, main thread, time per step, by size of change\n")
		p("  %10s %10s %11s %9s %9s  %s\n", "base", "new", "change", "share", "of change", "line")
		for _, l := range r.Lines {
			p("  %10s %10s %11s %3.0f%%>%3.0f%% %8.0f%%  %s%s\n", units.Duration(l.BaseUs), units.Duration(l.NewUs), signed(l.DeltaUs),
				l.BasePct, l.NewPct, l.SharePct, report.Printable(l.Where()), report.Printable(lineNote(l)))
		}
	}
	if len(r.Changes) > 0 {
		p("\nOther changes\n")
		for _, c := range r.Changes {
			line := "  " + c.What
			if c.Base != "" || c.New != "" {
				line += ": " + c.Base + " -> " + c.New
			}
			if c.Note != "" {
				line += "  [" + c.Note + "]"
			}
			p("%s\n", line)
		}
	}
	if len(r.Env) > 0 {
		p("\nEnvironment differences\n")
		for _, e := range r.Env {
			p("  %s: %s -> %s\n", report.Printable(e.Key), report.Printable(report.Clip(e.Base, 60)), report.Printable(report.Clip(e.New, 60)))
		}
	}
	return ew.err
}

// itemsText lists kernels or operators; with shares (kernels of runs on
// different devices) each row also gives its share of its run's kernel
// time, the figure comparable across devices.
func itemsText(ew *errWriter, title string, items []ItemDelta, shares bool) {
	if len(items) == 0 {
		return
	}
	ew.printf("\n%s, per step, by size of change (%s time)\n", title, items[0].Time)
	ew.printf("  %10s %10s %11s %9s %8s  %s\n", "base", "new", "change", "calls", "of change", "name")
	for _, it := range items {
		note := itemNote(it)
		if shares {
			note += fmt.Sprintf("  [share of kernel time %.1f%% -> %.1f%%]", it.BaseKernelPct, it.NewKernelPct)
		}
		ew.printf("  %10s %10s %11s %9s %8.0f%%  %s%s\n", units.Duration(it.BaseUs), units.Duration(it.NewUs), signed(it.DeltaUs),
			calls(it), it.SharePct, report.Printable(report.Clip(it.Name, 90)), note)
	}
}

func devicesDiffer(r *Result) bool {
	return len(r.Base.Devices) > 0 && len(r.New.Devices) > 0 && !slices.Equal(r.Base.Devices, r.New.Devices)
}

// itemNote says how an item was matched and what changed besides time.
func itemNote(it ItemDelta) string {
	var parts []string
	switch it.Match {
	case Added, Vanished:
		parts = append(parts, string(it.Match))
	case Normalised, SameOp:
		parts = append(parts, fmt.Sprintf("%s: %s -> %s", it.Match, namesList(it.BaseNames), namesList(it.NewNames)))
	}
	if len(it.BaseShapes) > 0 || len(it.NewShapes) > 0 {
		parts = append(parts, "shapes "+strings.Join(printable(it.BaseShapes), " ")+" -> "+strings.Join(printable(it.NewShapes), " "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "  [" + strings.Join(parts, "; ") + "]"
}

func namesList(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	s := report.Printable(report.Clip(names[0], 50))
	if len(names) > 1 {
		s += fmt.Sprintf(" +%d", len(names)-1)
	}
	return s
}

func printable(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = report.Printable(report.Clip(s, 60))
	}
	return out
}

func calls(it ItemDelta) string {
	if it.BaseCalls == it.NewCalls {
		return count(it.NewCalls)
	}
	return count(it.BaseCalls) + ">" + count(it.NewCalls)
}

// count prints a per-step count: fractions only below 10.
func count(x float64) string {
	if x < 10 && x != float64(int(x)) {
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.0f", x)
}

func devices(s SideSummary) string {
	if len(s.Devices) == 0 {
		return ""
	}
	return ", " + joinQuoted(s.Devices)
}

// WriteMarkdown writes r for a pull-request comment: the headline, the
// top contributions and the gate's outcome, under GitHub's 65,536
// character limit (long names clipped, at most 10 rows a table).
func WriteMarkdown(w io.Writer, r *Result) error {
	ew := &errWriter{w: w}
	p := ew.printf
	p("### bottleneck diff\n\n**%s**\n\n", md(r.Headline.Summary))
	for _, c := range r.Headline.Causes {
		p("%s\n\n", md(c))
	}
	p("%s. Base: `%s`; new: `%s`.\n\n", md(verdictLine(r)), code(r.Base.Label), code(r.New.Label))
	for _, wn := range r.Warnings {
		p("> ⚠️ %s\n\n", md(wn))
	}
	if len(r.Gate) > 0 {
		p("| CI gate | result |\n|---|---|\n")
		for _, g := range r.Gate {
			mark := "pass"
			if g.Failed {
				mark = "**FAIL**"
			}
			p("| `%s` | %s: %s |\n", code(g.Rule), mark, md(g.Why))
		}
		p("\n")
	}
	if len(r.Breakdown) > 0 {
		p("| category | base | new | change | share of change |\n|---|---:|---:|---:|---:|\n")
		for i, d := range r.Breakdown {
			if i == 10 {
				break
			}
			p("| %s | %s | %s | %s | %.0f%% |\n", d.Category, units.Duration(d.BaseUs), units.Duration(d.NewUs), signed(d.DeltaUs), d.SharePct)
		}
		p("\n")
	}
	for _, t := range []struct {
		title string
		items []ItemDelta
	}{{"kernel", r.Kernels}, {"operator", r.Ops}} {
		if len(t.items) == 0 {
			continue
		}
		p("| %s (%s time per step) | base | new | change | share of change |\n|---|---:|---:|---:|---:|\n", t.title, t.items[0].Time)
		for _, it := range t.items {
			p("| `%s`%s | %s | %s | %s | %.0f%% |\n", code(report.Clip(it.Name, 70)), md(itemNote(it)), units.Duration(it.BaseUs), units.Duration(it.NewUs), signed(it.DeltaUs), it.SharePct)
		}
		p("\n")
	}
	if len(r.Lines) > 0 {
		p("| Python line (main thread, time per step) | base | new | change | share of change |\n|---|---:|---:|---:|---:|\n")
		for _, l := range r.Lines {
			p("| `%s`%s | %s | %s | %s | %.0f%% |\n", code(report.Clip(l.Where(), 90)), md(lineNote(l)), units.Duration(l.BaseUs), units.Duration(l.NewUs), signed(l.DeltaUs), l.SharePct)
		}
		p("\n")
	}
	if len(r.Changes) > 0 {
		p("<details><summary>Other changes</summary>\n\n")
		for _, c := range r.Changes {
			line := "- " + md(c.What)
			if c.Base != "" || c.New != "" {
				line += ": " + md(c.Base) + " → " + md(c.New)
			}
			if c.Note != "" {
				line += " (" + md(c.Note) + ")"
			}
			p("%s\n", line)
		}
		p("\n</details>\n\n")
	}
	if len(r.Env) > 0 {
		p("<details><summary>Environment differences</summary>\n\n| setting | base | new |\n|---|---|---|\n")
		for _, e := range r.Env {
			p("| `%s` | %s | %s |\n", code(e.Key), md(report.Clip(e.Base, 60)), md(report.Clip(e.New, 60)))
		}
		p("\n</details>\n")
	}
	return ew.err
}

// GateOutcome is one --fail-if rule's result, for the Markdown comment.
type GateOutcome struct {
	Rule   string `json:"rule"`
	Failed bool   `json:"failed"`
	Why    string `json:"why"`
}

// md escapes text for Markdown tables and paragraphs.
func md(s string) string {
	s = report.Printable(s)
	r := strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "'", "[", `\[`, "]", `\]`)
	return r.Replace(s)
}

// code makes s safe inside a `code span` of a table.
func code(s string) string {
	return strings.NewReplacer("`", "'", "|", `\|`, "\n", " ").Replace(report.Printable(s))
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

// lineNote is a Python line's tags for a table row: "  [new; gc pauses;
// calls gc.collect]".
func lineNote(l LineDelta) string {
	var tags []string
	if l.Kind != "" {
		tags = append(tags, l.Kind)
	}
	if l.Source != "sampled" {
		tags = append(tags, l.Source)
	}
	tags = append(tags, l.Notes...)
	if len(tags) == 0 {
		return ""
	}
	return "  [" + strings.Join(tags, "; ") + "]"
}
