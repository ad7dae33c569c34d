package merge_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/cli/merge"
	"github.com/bottleneck-dev/bottleneck/internal/cli/summarize"
	"github.com/bottleneck-dev/bottleneck/internal/summary"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// TestSummarizeThenMerge: the map and reduce steps on 8 real ranks, the
// exit statuses of damaged, duplicate and missing input.
func TestSummarizeThenMerge(t *testing.T) {
	traces := filepath.Join(testutil.Traces(t), "param", "dlrm_kineto")
	dir := t.TempDir() + "/"
	if code, _, errOut := clitest.Run(summarize.NewCmd, traces, "-o", dir, "--host", "node\x1b[31m1"); code != exitcode.OK {
		t.Fatalf("summarize: exit %d: %s", code, errOut)
	}
	files, _ := filepath.Glob(dir + "rank*.summary.json")
	if len(files) != 8 {
		t.Fatalf("%d summary files, want 8", len(files))
	}
	code, out, errOut := clitest.Run(merge.NewCmd, files...)
	if code != exitcode.OK || !strings.Contains(out, "STRAGGLER (rank 7 holds the others back") {
		t.Fatalf("merge: exit %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("a host name's control bytes reached the report:\n%q", out)
	}
	code, out, _ = clitest.Run(merge.NewCmd, dir, "--json")
	var rep summary.Report
	if code != exitcode.OK || json.Unmarshal([]byte(out), &rep) != nil || rep.Format != summary.ReportFormat || rep.Ranks != 8 {
		t.Errorf("merge --json: exit %d, %d ranks", code, rep.Ranks)
	}

	// a file that is no summary: named, the rest merged, exit 3
	bad := filepath.Join(t.TempDir(), "bad.summary.json")
	os.WriteFile(bad, []byte(`{"traceEvents": []}`), 0o644)
	code, out, errOut = clitest.Run(merge.NewCmd, append(files, bad)...)
	if code != exitcode.Partial || !strings.Contains(errOut, bad) || !strings.Contains(out, "rank 7") {
		t.Errorf("with a bad file: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut = clitest.Run(merge.NewCmd, bad); code != exitcode.Failed || !strings.Contains(errOut, "no summary could be read") {
		t.Errorf("only a bad file: exit %d: %s", code, errOut)
	}
	// a rank twice: exit 1, both named
	stream := filepath.Join(t.TempDir(), "all.jsonl")
	if code, _, errOut := clitest.Run(summarize.NewCmd, traces, "-o", stream); code != exitcode.OK {
		t.Fatalf("summarize -o FILE: exit %d: %s", code, errOut)
	}
	if code, _, errOut = clitest.Run(merge.NewCmd, stream, files[0]); code != exitcode.Failed || !strings.Contains(errOut, "rank 0 twice") {
		t.Errorf("duplicate rank: exit %d: %s", code, errOut)
	}
	// a rank missing from the world: named, exit 3
	var seven []string
	for _, f := range files {
		if filepath.Base(f) != "rank3.summary.json" {
			seven = append(seven, f)
		}
	}
	if code, out, _ = clitest.Run(merge.NewCmd, seven...); code != exitcode.Partial || !strings.Contains(out, "MISSING: 1 of 8 ranks sent no summary: 3") {
		t.Errorf("missing rank: exit %d\n%s", code, out)
	}
	// summarize: a path that does not exist beside good ones
	if code, _, errOut = clitest.Run(summarize.NewCmd, traces, filepath.Join(traces, "nope.json"), "-o", t.TempDir()+"/"); code != exitcode.Partial || !strings.Contains(errOut, "nope.json") {
		t.Errorf("summarize with a missing file: exit %d: %s", code, errOut)
	}
}
