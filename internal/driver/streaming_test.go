package driver

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// sixteenRanks writes the 8 real dlrm ranks twice, as ranks 0-15 of a
// world of 16, into a directory.
func sixteenRanks(t *testing.T) string {
	t.Helper()
	src, _ := filepath.Glob(filepath.Join(testutil.Traces(t), "param", "dlrm_kineto", "*.json.gz"))
	if len(src) != 8 {
		t.Fatalf("%d dlrm traces, want 8", len(src))
	}
	dir := t.TempDir()
	info := regexp.MustCompile(`"distributedInfo": \{"backend": "nccl", "rank": (\d+), "world_size": 8\}`)
	for copy := range 2 {
		for _, p := range src {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(zr)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			m := info.FindSubmatch(body)
			if m == nil {
				t.Fatalf("%s: no distributedInfo to renumber", p)
			}
			var rank int
			fmt.Sscan(string(m[1]), &rank)
			rank += 8 * copy
			body = info.ReplaceAll(body, fmt.Appendf(nil, `"distributedInfo": {"backend": "nccl", "rank": %d, "world_size": 16}`, rank))
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("worker%d.pt.trace.json", rank)), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestStreamingSameReport: with StreamRanks traces or more, analyze reads,
// analyses and drops each trace in turn; its report is the one built
// from all the traces read at once.
func TestStreamingSameReport(t *testing.T) {
	dir := sixteenRanks(t)
	ios, _, _, _ := iostreams.Test()
	o := DefaultOptions()
	o.analysesOnly = true
	streamed, err := Open(ios, []string{dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(streamed.Traces) != 0 || len(streamed.Report.Traces) != 16 {
		t.Fatalf("streaming kept %d traces and reported %d, want 0 and 16", len(streamed.Traces), len(streamed.Report.Traces))
	}
	res, took, err := Load(ios, []string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	whole := Build(res, took, o)
	streamed.Report.ReadSeconds, whole.ReadSeconds = 0, 0
	a, _ := json.Marshal(streamed.Report)
	b, _ := json.Marshal(whole)
	if !bytes.Equal(a, b) {
		t.Errorf("the streamed report differs from the one of all traces at once (%d vs %d bytes)", len(a), len(b))
	}
	if streamed.Report.Diagnosis == nil || streamed.Report.Ranks == nil || len(streamed.Report.Ranks.Ranks) != 16 {
		t.Fatal("no cross-rank comparison")
	}
	// --rank: one rank analysed, all described
	o.Rank = 12
	one, err := Open(ios, []string{dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Report.Inputs) != 16 || len(one.Report.Traces) != 1 || one.Report.Traces[0].Rank != 12 {
		t.Errorf("--rank 12: %d inputs, %d traces", len(one.Report.Inputs), len(one.Report.Traces))
	}
}
