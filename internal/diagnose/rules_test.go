package diagnose

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// TestRulesDocumented keeps docs/diagnosis.md in step with the rules:
// each rule's section opens with a block generated from its entry (what
// fires it, the thresholds it names with their values, its change and
// alternatives, its tests); a rule without a section gets one.
// BOTTLENECK_UPDATE=1 rewrites the file.
func TestRulesDocumented(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "diagnosis.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	want := doc
	for _, r := range Rules {
		if r.Factor < 0 || r.Factor > 1 || r.Change == "" {
			t.Errorf("rule %s: factor %v, change %q", r.ID, r.Factor, r.Change)
		}
		heading := "\n### `" + r.ID + "` (" + string(r.Class) + ")\n"
		if !strings.Contains(want, heading) {
			end := strings.Index(want, "\n### About the factors")
			if end < 0 {
				t.Fatal("docs/diagnosis.md has no \"### About the factors\" section to put a new rule's before")
			}
			want = want[:end] + heading + "\n" + want[end:]
		}
		i := strings.Index(want, heading) + len(heading)
		rest := want[i:]
		if strings.HasPrefix(rest, "\n"+ruleDocStart) {
			rest = rest[strings.Index(rest, ruleDocEnd)+len(ruleDocEnd):]
		}
		want = want[:i] + "\n" + ruleDoc(r) + rest
	}
	for _, m := range regexp.MustCompile("(?m)^### `([^`]+)` \\(").FindAllStringSubmatch(want, -1) {
		if _, ok := rulesByID[m[1]]; !ok {
			t.Errorf("docs/diagnosis.md has a section for %s, which is no rule", m[1])
		}
	}
	for _, c := range []Class{Input, Host, Launch, Sync, GPUCompute, Copy, Comm, Straggler, Memory, CPUCompute, IO} {
		if !strings.Contains(want, string(c)) {
			t.Errorf("class %s is not documented", c)
		}
	}
	if want == doc {
		return
	}
	if *testutil.Update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s does not show the rules' entries as they are: run BOTTLENECK_UPDATE=1 go test ./internal/diagnose -run TestRulesDocumented and complete any new section", path)
}

const (
	ruleDocStart = "<!-- generated from the rule's entry by `BOTTLENECK_UPDATE=1 go test ./internal/diagnose -run TestRulesDocumented` -->\n"
	ruleDocEnd   = "<!-- end of the generated entry -->\n"
)

// ruleDoc is the generated block that opens a rule's section.
func ruleDoc(r Rule) string {
	var b strings.Builder
	b.WriteString(ruleDocStart)
	fmt.Fprintf(&b, "> **Entry:** fires when %s.", mdText(strings.TrimSuffix(r.When, ".")))
	if th := thresholdsNamed(r.When); th != "" {
		fmt.Fprintf(&b, " Thresholds: %s.", th)
	}
	if r.Factor > 0 {
		fmt.Fprintf(&b, " Factor %g.", r.Factor)
	} else {
		b.WriteString(" No saving estimated.")
	}
	fmt.Fprintf(&b, " Tests: fires in `%s`, silent in `%s`.\n>\n", r.Fires, r.Silent)
	f := Finding{Change: r.Change}
	splitAlternatives(&f)
	fmt.Fprintf(&b, "> **Change** (when the evidence names nothing more specific): %s\n", mdText(f.Change))
	for _, a := range f.Alternatives {
		fmt.Fprintf(&b, ">\n> **%s:** %s\n", a.Kind, mdText(a.Change))
	}
	b.WriteString(ruleDocEnd)
	return b.String()
}

// mdText escapes what Markdown would read as emphasis, code or HTML in
// an entry's plain text (__getitem__, a * b, <x>).
var mdText = strings.NewReplacer(`\`, `\\`, "_", `\_`, "*", `\*`, "`", "\\`", "<", "&lt;").Replace

// thresholdsNamed lists the Params fields that when names, with their
// values in Default.
func thresholdsNamed(when string) string {
	var out []string
	v := reflect.ValueOf(Default)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if regexp.MustCompile(`\b` + name + `\b`).MatchString(when) {
			out = append(out, fmt.Sprintf("`%s` = %v", name, v.Field(i).Interface()))
		}
	}
	return strings.Join(out, ", ")
}

// applyRules applies the rules whose id starts with prefix, alone.
func applyRules(s *state, prefix string) {
	for _, r := range Rules {
		if strings.HasPrefix(r.ID, prefix) && r.detect != nil {
			r.detect(s)
		}
	}
}

// The rules whose stake is a class's share of the step fire from
// MinFinding and stay silent under it, whatever else holds.
func TestShareRulesFireFromMinFinding(t *testing.T) {
	for _, c := range []struct {
		rule  string
		class Class
	}{
		{"input.loader", Input}, {"io.in-step", IO}, {"host.launch", Launch}, {"host.python", Host}, {"sync.blocking", Sync},
		{"gpu.kernels", GPUCompute}, {"copy.h2d", Copy}, {"comm.exposed", Comm}, {"cpu.native", CPUCompute},
	} {
		for _, share := range []float64{Default.MinFinding * 0.9, 0.3} {
			s := &state{p: Default, device: c.class != CPUCompute, step: 1000, steps: 1, share: map[Class]float64{c.class: share}, ev: map[Class][]Evidence{},
				in: Analyses{Run: &runevidence.RunEvidence{Python: &runevidence.PythonEvidence{Samples: 100, IOShare: share}}}, d: &Diagnosis{}}
			s.py = s.in.Run.Python
			s.findings()
			if fired := findingOf(s.d, c.rule) != nil; fired != (share >= Default.MinFinding) {
				t.Errorf("%s at %.0f%% of the step: fired %v", c.rule, 100*share, fired)
			}
		}
	}
}

// TestRuleTests: every rule names a test where it fires and one where it
// stays silent, and each named test is about the rule: it names the rule
// or calls its detector (a corpus case names it among its rules).
func TestRuleTests(t *testing.T) {
	tests := testBodies(t, ".")
	// the corpus's cases: internal/driver's verdictCases, which
	// TestVerdictCorpus runs
	b, err := os.ReadFile(filepath.Join("..", "driver", "verdicts_test.go"))
	if err != nil || !strings.Contains(string(b), "\nfunc TestVerdictCorpus(") {
		t.Fatalf("internal/driver/verdicts_test.go: no TestVerdictCorpus (%v)", err)
	}
	corpus := string(b)
	for _, r := range Rules {
		calls := "\x00" // the detector's call, when the rule has one
		if r.detect != nil {
			name := runtime.FuncForPC(reflect.ValueOf(r.detect).Pointer()).Name()
			calls = name[strings.LastIndex(name, ".")+1:] + "()"
		}
		for _, ref := range []string{r.Fires, r.Silent} {
			about := func(text string) bool {
				return strings.Contains(text, `"`+r.ID+`"`) || strings.Contains(text, "."+calls)
			}
			switch test, c, inCorpus := strings.Cut(strings.TrimPrefix(ref, "driver."), "/"); {
			case ref == "":
				t.Errorf("%s: no test named where it must fire and one where it must stay silent", r.ID)
			case strings.HasPrefix(ref, "driver."):
				i := strings.Index(corpus, `{name: "`+c+`"`)
				if test != "TestVerdictCorpus" || !inCorpus || i < 0 {
					t.Errorf("%s: no corpus case %s", r.ID, ref)
					continue
				}
				text := corpus[i+1:]
				text = text[:max(0, strings.Index(text, "{name: "))]
				if !about(text) {
					t.Errorf("%s: corpus case %s does not name the rule", r.ID, ref)
				}
			default:
				body, ok := tests[ref]
				if !ok {
					t.Errorf("%s: no test %s in internal/diagnose", r.ID, ref)
				} else if !about(body) {
					t.Errorf("%s: %s neither names the rule nor calls %s", r.ID, ref, calls)
				}
			}
		}
	}
}

// testBodies maps each test function of the package in dir to its source.
func testBodies(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s: %v", dir, err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Test") && fn.Body != nil {
				out[fn.Name.Name] = string(src[fset.Position(fn.Body.Pos()).Offset:fset.Position(fn.Body.End()).Offset])
			}
		}
	}
	return out
}
