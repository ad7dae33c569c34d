package diagnose

import (
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
)

// TestRulesDocumented keeps rules.go and docs/diagnosis.md in step.
func TestRulesDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "diagnosis.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	seen := map[string]bool{}
	for _, r := range Rules {
		if seen[r.ID] {
			t.Errorf("rule %s twice", r.ID)
		}
		seen[r.ID] = true
		if !strings.Contains(doc, "\n### `"+r.ID+"` ("+string(r.Class)+")\n") {
			t.Errorf("rule %s has no section \"### `%s` (%s)\" in docs/diagnosis.md", r.ID, r.ID, r.Class)
		}
		if r.Factor < 0 || r.Factor > 1 || r.Change == "" {
			t.Errorf("rule %s: factor %v, change %q", r.ID, r.Factor, r.Change)
		}
	}
	for _, m := range regexp.MustCompile("(?m)^### `([^`]+)` \\(").FindAllStringSubmatch(doc, -1) {
		if !seen[m[1]] {
			t.Errorf("docs/diagnosis.md has a section for %s, which is no rule", m[1])
		}
	}
	for _, c := range []Class{Input, Host, Launch, Sync, GPUCompute, Copy, Comm, Straggler, Memory, CPUCompute, IO} {
		if !strings.Contains(doc, string(c)) {
			t.Errorf("class %s is not documented", c)
		}
	}
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
