package diagnose

import (
	"os"
	"path/filepath"
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
		if !strings.Contains(doc, "`"+r.ID+"`") {
			t.Errorf("rule %s is not documented in docs/diagnosis.md", r.ID)
		}
		if r.Factor < 0 || r.Factor > 1 || r.Change == "" {
			t.Errorf("rule %s: factor %v, change %q", r.ID, r.Factor, r.Change)
		}
	}
	for _, c := range []Class{Input, Host, Launch, Sync, GPUCompute, Copy, Comm, Straggler, Memory, CPUCompute, IO} {
		if !strings.Contains(doc, string(c)) {
			t.Errorf("class %s is not documented", c)
		}
	}
}
