package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, out, errOut := clitest.Run(NewCmd, args...)
	return code, out + errOut
}

func budget(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "budget.toml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func loader(name string) string {
	return filepath.Join(testutil.RepoRoot(), "testdata", "diff", "loader", name)
}

const ciBudget = `fail_if = ["step_time > 30ms", "dataloader_time > 5ms"]
forbid_verdicts = ["input-bound"]
`

// The input-bound run exceeds the budget on all three counts.
func TestCheckOverBudget(t *testing.T) {
	code, out := run(t, loader("base"), "--budget", budget(t, ciBudget))
	if code != exitcode.Regression {
		t.Fatalf("exit %d, want %d\n%s", code, exitcode.Regression, out)
	}
	if strings.Count(out, "budget FAIL") != 3 {
		t.Errorf("want three failed budgets:\n%s", out)
	}
}

// The run with workers is within the same budget: exit 0.
func TestCheckWithinBudget(t *testing.T) {
	code, out := run(t, loader("workers2"), "--budget", budget(t, ciBudget))
	if code != exitcode.OK || strings.Contains(out, "FAIL") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestCheckUsage(t *testing.T) {
	if code, out := run(t, loader("base")); code != exitcode.Usage || !strings.Contains(out, "--budget") {
		t.Errorf("no budget: exit %d %s", code, out)
	}
	if code, out := run(t, loader("base"), "--budget", budget(t, `fail_if = ["step_time > +5%"]`)); code != exitcode.Usage || !strings.Contains(out, "budget.toml") {
		t.Errorf("relative rule: exit %d %s", code, out)
	}
}
