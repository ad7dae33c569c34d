package diagnose

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
