package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/tracegen"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1GB": 1 << 30, "200MB": 200 << 20, "500kb": 500 << 10, "1.5G": 3 << 29,
		"10GiB": 10 << 30, "123": 123, "64 MB": 64 << 20, "2b": 2,
	} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "-1MB", "1XB", "abc"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q): no error", in)
		}
	}
}

func TestRunWritesTraceAndStats(t *testing.T) {
	out := filepath.Join(t.TempDir(), "t.json.gz")
	var stdout, stderr bytes.Buffer
	err := run([]string{"-size", "1MB", "-seed", "5", "-gzip", "-o", out, "-stats-json"}, &stdout, &stderr)
	if err != nil {
		t.Fatal(err, stderr.String())
	}
	var st tracegen.Stats
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil {
		t.Fatalf("stats JSON: %v\n%s", err, stdout.String())
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != st.CompressedBytes || st.Kernels == 0 || len(st.Steps) < 2 {
		t.Errorf("file %d bytes, stats %+v", fi.Size(), st)
	}
	if !strings.Contains(stderr.String(), "wrote ") || !strings.Contains(stderr.String(), "kernel=") {
		t.Errorf("summary: %q", stderr.String())
	}
}

func TestRunToStdout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-size", "600KB", "-q"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(stdout.Bytes()) || stderr.Len() != 0 {
		t.Errorf("stdout valid=%v, stderr %q", json.Valid(stdout.Bytes()), stderr.String())
	}
}

func TestRunBadFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "never.json")
	for _, args := range [][]string{
		{"-size", "lots"}, {"-devices", "3", "-o", out}, {"-gzip-level", "12", "-o", out},
		{"-stats-json"}, {"extra"},
	} {
		var so, se bytes.Buffer
		if err := run(args, &so, &se); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad options still created %s (%v)", out, err)
	}
}

func TestReplicate(t *testing.T) {
	src := "../../testdata/traces/hta/rank_non_gpu/rank_non_gpu.json.gz"
	out := filepath.Join(t.TempDir(), "r.json.gz")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-replicate", src, "-size", "2MB", "-gzip", "-o", out, "-stats-json"}, &stdout, &stderr); err != nil {
		t.Fatal(err, stderr.String())
	}
	var st tracegen.ReplicaStats
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil || st.Copies < 2 || st.Bytes < 1<<20 {
		t.Fatalf("stats %+v (%v)", st, err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() >= st.Bytes {
		t.Errorf("%s not gzipped: %v", out, err)
	}

	var stderr2 bytes.Buffer
	err := run([]string{"-replicate", filepath.Join(t.TempDir(), "none.json"), "-o", filepath.Join(t.TempDir(), "x.json")}, &bytes.Buffer{}, &stderr2)
	if err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("a missing source: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"traceEvents": [{"ph": "X",}]}`), 0o644)
	if err := run([]string{"-replicate", bad, "-o", filepath.Join(t.TempDir(), "y.json")}, &bytes.Buffer{}, &stderr2); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("a damaged source: %v", err)
	}
}
