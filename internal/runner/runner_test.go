package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// Two runs given the same --out both used to run and overwrite each
// other's files: exactly one may claim the directory.
func TestNewRunDirClaimsOnce(t *testing.T) {
	for round := 0; round < 10; round++ {
		dir := filepath.Join(t.TempDir(), "out")
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, errs := 0, []string{}
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := NewRunDir(dir, time.Now())
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					won++
				} else {
					errs = append(errs, err.Error())
				}
			}()
		}
		wg.Wait()
		if won != 1 {
			t.Fatalf("round %d: %d runs claimed %s (errors %q)", round, won, dir, errs)
		}
		for _, e := range errs {
			if !strings.Contains(e, dir) || !strings.Contains(e, "--output") {
				t.Errorf("unclear refusal: %s", e)
			}
		}
	}
}

func TestNewRunDirNeverWritesOverFiles(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRunDir(dir, time.Now()); err == nil || !strings.Contains(err.Error(), "already holds files") {
		t.Errorf("non-empty --out accepted: %v", err)
	}
	if b, _ := os.ReadFile(keep); string(b) != "mine" {
		t.Errorf("the user's file changed: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files were added: %v", ents)
	}
	// an existing empty directory (mktemp -d) is fine
	empty := t.TempDir()
	got, err := NewRunDir(empty, time.Now())
	if err != nil || got != empty {
		t.Errorf("empty --out: %q, %v", got, err)
	}
	if _, err := NewRunDir(empty, time.Now()); err == nil || !strings.Contains(err.Error(), "run in progress") {
		t.Errorf("claimed --out accepted again: %v", err)
	}
}

// A manifest left "running" (bottleneck was SIGKILLed) is reported as an
// interrupted run, unless the lock names a live bottleneck.
func TestInterrupted(t *testing.T) {
	dir := t.TempDir()
	m := &rundir.Manifest{State: "running", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if got := rundir.Interrupted(dir, m); !strings.HasPrefix(got, "interrupted: ") || !strings.Contains(got, "2026-01-02T03:04:05Z") {
		t.Errorf("no lock: %q", got)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no `true` command")
	}
	for pid, want := range map[int]string{dead.Process.Pid: "interrupted: ", os.Getpid(): "still running (bottleneck pid "} {
		if err := os.WriteFile(filepath.Join(dir, rundir.LockName), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := rundir.Interrupted(dir, m); !strings.HasPrefix(got, want) {
			t.Errorf("lock pid %d: %q, want %q...", pid, got, want)
		}
	}
}

// The agent's files live in the run directory while the program runs
// (a killed bottleneck used to leave them in /tmp) and are gone after.
func TestAgentFilesLiveInTheRunDir(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var out bytes.Buffer
	res, err := Run(context.Background(), Config{
		Mode: Launcher, Args: []string{py, "-c", "import os; print(os.environ['PYTHONPATH'].split(os.pathsep)[0])"},
		RunDir: filepath.Join(t.TempDir(), "run"), Agent: DefaultAgentConfig(), Stdout: &out, Stderr: &out,
		Signals: make(chan os.Signal),
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %+v\n%s", err, res, out.String())
	}
	if got, want := strings.TrimSpace(out.String()), filepath.Join(res.RunDir, AgentDirName); got != want {
		t.Errorf("agent directory %q, want %q", got, want)
	}
	for _, gone := range []string{AgentDirName, rundir.LockName} {
		if _, err := os.Stat(filepath.Join(res.RunDir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s left in the run directory (%v)", gone, err)
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		t.Errorf("files left in TMPDIR: %v", ents)
	}
	if res.Manifest.State != "ended" {
		t.Errorf("state %q", res.Manifest.State)
	}
}
