package run

// End-to-end tests of `run --live` (docs/run.md, "Live view"); like
// run_test.go's they run real programs with BOTTLENECK_TEST_PYTHON.

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/live"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// liveProg trains a tiny model STEPS steps of at least SLEEP seconds each,
// writing each step's line in two pieces (as progress bars do), then exits
// with CODE (137: it kills itself halfway). Its output does not depend on
// timing.
const liveProg = `import sys, time
import torch
steps, pause, code = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
m = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
for k in range(steps):
    sys.stdout.write("step %d begins" % k)
    sys.stdout.flush()
    opt.zero_grad()
    m(torch.randn(4, 8)).sum().backward()
    time.sleep(pause)
    opt.step()
    sys.stdout.write(" and ends\n")
    sys.stdout.flush()
    if k == steps // 2 and code == 137:
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
print("done")
sys.exit(code)
`

func writeLiveProg(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "live_prog.py")
	if err := os.WriteFile(p, []byte(liveProg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// bnLive is bn with the live view's test settings applied to the options.
func bnLive(t *testing.T, sigs chan os.Signal, set func(*Options), args ...string) result {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	ios.In = strings.NewReader("")
	out, errOut := &syncBuf{}, &syncBuf{}
	ios.Out, ios.ErrOut = out, errOut
	ios.SetTTY(false, false)
	runDir := filepath.Join(t.TempDir(), "run")
	o := &Options{IO: ios, Signals: sigs}
	if set != nil {
		set(o) // may replace ios.Out to read it while the program runs
	}
	out, _ = ios.Out.(*syncBuf)
	cmd := newCmd(o, runRun)
	cmd.SetArgs(append([]string{"-o", runDir}, args...))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	r := result{err: err, dir: runDir, stdout: out.String(), stderr: errOut.String()}
	var ee *exitcode.Error
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.Code
	default:
		r.code = -1
	}
	return r
}

// plainStdout is the program's stdout and status run by Python alone.
func plainStdout(t *testing.T, py string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(py, args...)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return string(out), 128 + int(ws.Signal())
	}
	return string(out), cmd.ProcessState.ExitCode()
}

var liveLine = regexp.MustCompile(`(?m)^bottleneck live: rank0 step (\d+) .*$`)

// On a stderr that is not a terminal, --live writes plain lines (the
// last when the program ended); the program's stdout and exit status are
// what they are without bottleneck.
func TestLivePlainLines(t *testing.T) {
	py := torchPython(t)
	prog := writeLiveProg(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"steps, exit 3", []string{prog, "40", "0.01", "3"}},
		{"exit3.py", []string{ex(t, "exit3.py")}},
		{"chatty.py", []string{ex(t, "chatty.py"), "--lines", "10", "--pause", "0.02"}},
		{"killed", []string{prog, "40", "0.01", "137"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, code := plainStdout(t, py, c.args...)
			r := bnLive(t, nil, func(o *Options) { o.livePlainEvery = 200 * time.Millisecond },
				append(append(small(py), "--live"), c.args...)...)
			if r.code != code || r.stdout != want {
				t.Fatalf("exit %d stdout %q, want %d and %q\n%s", r.code, r.stdout, code, want, r.stderr)
			}
			if strings.Contains(r.stderr, "\x1b") {
				t.Errorf("escape sequences on a stderr that is not a terminal:\n%q", r.stderr)
			}
			lines := liveLine.FindAllString(r.stderr, -1)
			switch c.name {
			case "chatty.py": // no torch, no steps: no step line
				if len(lines) != 0 {
					t.Errorf("live lines without steps: %q", lines)
				}
				return
			case "killed": // the agent could not say it ended; lines, if any, do not either
				if strings.Contains(r.stderr, "program ended") {
					t.Errorf("a killed program's view says it ended:\n%s", r.stderr)
				}
				return
			}
			if len(lines) == 0 || !strings.HasSuffix(lines[len(lines)-1], "; program ended") {
				t.Fatalf("no plain live line ending with the program's end:\n%s", r.stderr)
			}
			if c.name == "steps, exit 3" {
				// its steps sleep: blocked, in neither a sync nor a collective
				m := blockedParts.FindStringSubmatch(lines[len(lines)-1])
				if m == nil || m[4] != "" {
					t.Fatalf("no blocked split of one rank in %q", lines[len(lines)-1])
				}
				var p [5]float64
				for j := range p {
					p[j], _ = strconv.ParseFloat(m[j+1], 64)
				}
				if p[4] <= p[1]+p[2] {
					t.Errorf("a sleep not blocked otherwise: device %v%%, collectives %v%%, other %v%%", p[1], p[2], p[4])
				}
				// every step's scheduling is read under --live, so no
				// step's time is left unsplit ("rest": steps that shared
				// a reading were, 90% of an H100 run's last 20 steps)
				if m := restPart.FindStringSubmatch(lines[len(lines)-1]); m != nil {
					t.Errorf("rest %s%% of the last steps unsplit: %q", m[1], lines[len(lines)-1])
				}
			}
			if _, err := os.Stat(filepath.Join(r.dir, ".live")); !os.IsNotExist(err) {
				t.Errorf(".live left in the run directory: %v", err)
			}
			if m, err := rundir.ReadManifest(r.dir); err != nil || !m.Settings.Live {
				t.Errorf("manifest settings: live not recorded (%v)", err)
			}
		})
	}
}

// Without --live the agent writes no live files and bottleneck prints no
// live line.
func TestLiveOffWritesNothing(t *testing.T) {
	py := torchPython(t)
	prog := writeLiveProg(t)
	r := bnLive(t, nil, nil, append(small(py), prog, "12", "0.01", "0")...)
	if r.code != 0 || strings.Contains(r.stderr, "bottleneck live:") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if m, err := rundir.ReadManifest(r.dir); err != nil || m.Settings.Live {
		t.Errorf("manifest: live on without --live (%v)", err)
	}
	ev := loadEvidence(t, r.dir, "rank0")
	for _, e := range ev.Errors {
		if strings.Contains(e, "live") {
			t.Errorf("agent error %q", e)
		}
	}
}

// --live=web: the event stream delivers views whose step count grows
// while the program runs, then "done"; the same address then serves the
// run's HTML report until a signal ends the grace period.
func TestLiveWeb(t *testing.T) {
	py := torchPython(t)
	prog := writeLiveProg(t)
	url, sigs, done := liveWebRun(t, py, prog, "100", "0.02")
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("url %q", url)
	}
	base := strings.TrimSuffix(url, "/")
	res, err := http.Get(base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	var steps []int
	sawDone := false
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	event := ""
	for !sawDone && sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "event: "):
			event = strings.TrimPrefix(l, "event: ")
		case event == "done" && strings.HasPrefix(l, "data: "):
			sawDone = true
		case event == "view" && strings.HasPrefix(l, "data: "):
			var v live.View
			if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &v); err != nil {
				t.Fatalf("view %q: %v", l, err)
			}
			if len(v.Ranks) == 1 && !v.Ranks[0].Ended {
				steps = append(steps, v.Ranks[0].Step)
			}
		}
	}
	res.Body.Close()
	if !sawDone {
		t.Fatalf("the stream ended without done (%v)", sc.Err())
	}
	// 100 steps of 20 ms or more, a snapshot every 0.5 s: several views
	// while it ran, their step counts growing
	if len(steps) < 2 || steps[len(steps)-1] <= steps[0] {
		t.Fatalf("steps seen while running %v, want at least 2 growing", steps)
	}
	for i := 1; i < len(steps); i++ {
		if steps[i] < steps[i-1] {
			t.Errorf("step count went back: %v", steps)
		}
	}
	page, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	sigs <- os.Interrupt // ends the grace period
	r := <-done
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	html, err := os.ReadFile(filepath.Join(r.dir, rundir.ReportHTML))
	if err != nil || string(body) != string(html) {
		t.Errorf("after the run / is not report.html (%v): %.200q", err, body)
	}
	if want, _ := plainStdout(t, py, prog, "100", "0.02", "0"); r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "the report is on "+url) {
		t.Errorf("stderr does not say where the report is:\n%s", r.stderr)
	}
}

// Ctrl-C with --live=web is Ctrl-C without it: the program gets
// KeyboardInterrupt and its status is kept; the report is then served
// until the next one.
func TestLiveWebInterrupt(t *testing.T) {
	py := torchPython(t)
	prog := writeLiveProg(t)
	sigs := make(chan os.Signal, 2)
	out := &syncBuf{}
	urls := make(chan string, 1)
	done := make(chan result, 1)
	go func() {
		done <- bnLive(t, sigs, func(o *Options) {
			o.IO.Out = out
			o.liveGrace = 5 * time.Minute
			o.liveReady = func(u string) { urls <- u }
		}, append(small(py), "--live=web", prog, "100000", "0.01", "0")...)
	}()
	url := strings.TrimSuffix(<-urls, "/")
	waitFor(t, "steps", 120*time.Second, func() bool { return strings.Contains(out.String(), "step 3 ") })
	sigs <- os.Interrupt
	waitFor(t, "the report", 120*time.Second, func() bool {
		res, err := http.Get(url + "/")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return !strings.Contains(string(b), "EventSource")
	})
	sigs <- os.Interrupt
	r := <-done
	if r.code != 130 || !strings.Contains(r.stderr, "KeyboardInterrupt") {
		t.Fatalf("exit %d, want 130 and the program's KeyboardInterrupt\n%s", r.code, r.stderr)
	}
	if m, _ := rundir.ReadManifest(r.dir); m == nil || !m.Interrupted || m.Exit.Reason != "interrupted" {
		t.Errorf("manifest: %+v", m)
	}
}

// A busy --live-port fails the command before the program runs.
func TestLiveWebBusyPort(t *testing.T) {
	py := torchPython(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	r := bnLive(t, nil, nil, append(small(py), "--live=web", "--live-port", port, writeLiveProg(t), "3", "0", "0")...)
	if r.code != exitcode.Failed || r.err == nil || !strings.Contains(r.err.Error(), "--live=web") || r.stdout != "" {
		t.Errorf("busy port: exit %d err %v stdout %q", r.code, r.err, r.stdout)
	}
	if _, err := os.Stat(r.dir); !os.IsNotExist(err) {
		t.Errorf("a run directory for a run that did not start: %v", err)
	}
}

// The terminal view under tmux: the frame at the bottom of the screen
// while the program runs, and the program's lines whole above it.
func TestLiveTmux(t *testing.T) {
	py := torchPython(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: the terminal view is tested by its golden frame only")
	}
	bin := filepath.Join(t.TempDir(), "bottleneck")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/bottleneck-dev/bottleneck/cmd/bottleneck").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	prog := writeLiveProg(t)
	sock := "bn-live-" + filepath.Base(t.TempDir())
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	marker := filepath.Join(t.TempDir(), "exit")
	shell := strings.Join([]string{bin, "run", "--python", py, "--skip-first", "1", "--warmup", "1", "--active", "2",
		"--live", "-o", filepath.Join(t.TempDir(), "run"), prog, "150", "0.03", "0"}, " ") +
		"; echo $? > " + marker + "; sleep 600"
	tmux("new-session", "-d", "-x", "100", "-y", "30", shell)
	defer exec.Command("tmux", "-L", sock, "kill-server").Run()
	var screen string
	waitFor(t, "the live frame", 120*time.Second, func() bool {
		screen = tmux("capture-pane", "-p")
		return strings.Contains(screen, "steps/s") && strings.Contains(screen, "step now") &&
			strings.Contains(screen, "cause so far (provisional): ")
	})
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	frame := -1
	for i, l := range rows {
		if strings.HasPrefix(l, "bottleneck --live: ") {
			frame = i
		}
	}
	if frame < 0 || len(rows)-frame < 6 {
		t.Fatalf("no frame at the bottom:\n%s", screen)
	}
	progLine := regexp.MustCompile(`^step \d+ begins( and ends)?$`)
	for _, l := range rows[:frame] {
		if l != "" && !progLine.MatchString(l) {
			t.Errorf("a torn or foreign line above the frame: %q\n%s", l, screen)
		}
	}
	waitFor(t, "the run's end", 300*time.Second, func() bool { _, err := os.Stat(marker); return err == nil })
	if b, _ := os.ReadFile(marker); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("exit status %q", b)
	}
	screen = tmux("capture-pane", "-p", "-S", "-400")
	if strings.Contains(screen, "bottleneck --live: ") {
		t.Errorf("the frame is left on the screen after the run:\n%s", screen)
	}
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "step ") && !progLine.MatchString(l) {
			t.Errorf("torn program line %q", l)
		}
	}
}

// Under torchrun each rank has its part of the plain line, the slowest
// named, and the ranks' output and exit status are kept.
func TestLiveTorchrun(t *testing.T) {
	py := torchPython(t)
	torchrun := filepath.Join(filepath.Dir(py), "torchrun")
	if _, err := os.Stat(torchrun); err != nil {
		t.Skipf("no torchrun next to %s", py)
	}
	r := bnLive(t, nil, func(o *Options) { o.livePlainEvery = 200 * time.Millisecond },
		"--skip-first", "1", "--warmup", "1", "--active", "2", "--live", "--",
		torchrun, "--nproc_per_node", "2", "--master_port", "29563", ex(t, "ddp_gloo.py"), "--steps", "8")
	if r.code != 0 || !strings.Contains(r.stdout, "rank 0 of 2 done (RANK=0)") || !strings.Contains(r.stdout, "rank 1 of 2 done (RANK=1)") {
		t.Fatalf("exit %d stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	last := ""
	for _, l := range strings.Split(r.stderr, "\n") {
		// (the window's diagnosis has a line of its own, whenever it is done)
		if strings.HasPrefix(l, "bottleneck live: ") && !strings.Contains(l, "'s recorded window (") {
			last = l
		}
	}
	if !strings.Contains(last, "rank0 step ") || !strings.Contains(last, " | rank1 step ") ||
		strings.Count(last, "(slowest)") != 1 || strings.Count(last, "program ended") != 2 {
		t.Errorf("last live line %q", last)
	}
}

// liveWebRun starts `run --live=web` on the live test program (steps of
// pause seconds, exit 0) and returns the page's address once it serves,
// the channel of the signals the run receives (the page is served until
// one comes) and the run's result.
func liveWebRun(t *testing.T, py, prog, steps, pause string) (string, chan os.Signal, chan result) {
	t.Helper()
	sigs := make(chan os.Signal, 2)
	urls := make(chan string, 1)
	done := make(chan result, 1)
	go func() {
		done <- bnLive(t, sigs, func(o *Options) {
			o.liveGrace = 5 * time.Minute // ended by a signal
			o.liveReady = func(u string) { urls <- u }
		}, append(small(py), "--live=web", prog, steps, pause, "0")...)
	}()
	select {
	case url := <-urls:
		return url, sigs, done
	case r := <-done:
		t.Fatalf("ended before serving: exit %d\n%s", r.code, r.stderr)
	}
	return "", nil, nil
}

// waitingRankProg: two gloo ranks all-reducing every step, rank 1
// sleeping 50 ms in its step first, so rank 0 waits for it in the
// all-reduce.
const waitingRankProg = `import sys, time
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
m = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
t = torch.ones(1000)
for _ in range(int(sys.argv[1])):
    opt.zero_grad()
    m(torch.randn(4, 8)).sum().backward()
    if rank == 1:
        time.sleep(0.05)
    dist.all_reduce(t)
    opt.step()
dist.barrier()
print("rank %d done" % rank)
dist.destroy_process_group()
`

var restPart = regexp.MustCompile(`, rest ([\d.]+)%`)

var blockedParts = regexp.MustCompile(`blocked ([\d.]+)% \(device ([\d.]+)%, collectives ([\d.]+)%(?:, other ranks ([\d.]+)%)?, other ([\d.]+)%\)`)

// Under torchrun, the sampler's split of the blocked time: the rank that
// sleeps in its step is blocked otherwise, the one waiting for it in the
// all-reduce is blocked in the collective, most of it waiting for the
// other rank (its time there beyond the sleeper's).
func TestLiveTorchrunBlockedSplit(t *testing.T) {
	py := torchPython(t)
	torchrun := filepath.Join(filepath.Dir(py), "torchrun")
	if _, err := os.Stat(torchrun); err != nil {
		t.Skipf("no torchrun next to %s", py)
	}
	prog := filepath.Join(t.TempDir(), "waiting_rank.py")
	if err := os.WriteFile(prog, []byte(waitingRankProg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := bnLive(t, nil, func(o *Options) { o.livePlainEvery = 200 * time.Millisecond },
		"--no-trace", "--live", "--", torchrun, "--nproc_per_node", "2", "--master_port", "29571", prog, "40")
	if r.code != 0 || !strings.Contains(r.stdout, "rank 0 done") || !strings.Contains(r.stdout, "rank 1 done") {
		t.Fatalf("exit %d stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	last := ""
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "bottleneck live: rank0 ") {
			last = l
		}
	}
	ranks := strings.Split(last, " | ")
	if len(ranks) != 2 {
		t.Fatalf("last live line %q", last)
	}
	t.Logf("last live line %s", last)
	parts := make([][5]float64, 2) // blocked, device, collectives, other ranks, other
	for i, s := range ranks {
		m := blockedParts.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("rank %d: no blocked split in %q", i, s)
		}
		for j := range parts[i] {
			parts[i][j], _ = strconv.ParseFloat(m[j+1], 64) // "" (no other ranks part): 0
		}
	}
	r0, r1 := parts[0], parts[1]
	if r0[2]+r0[3] <= r0[4] || r0[3] <= r0[2] {
		t.Errorf("rank 0 (waiting in the all-reduce): collectives %v%%, other ranks %v%%, other %v%%", r0[2], r0[3], r0[4])
	}
	if r1[4] <= r1[2]+r1[3] || r1[3] != 0 {
		t.Errorf("rank 1 (sleeping): collectives %v%%, other ranks %v%%, other %v%%", r1[2], r1[3], r1[4])
	}
	if r0[1] != 0 || r1[1] != 0 {
		t.Errorf("a device sync on a CPU-only run: %v%%, %v%%", r0[1], r1[1])
	}
}
