package diagnose

import (
	"cmp"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// cpu.contended fires where other processes held the CPUs that the
// program's OpenMP threads spin on, and stays silent on a quiet machine,
// where the program's own threads took the CPUs, on one thread, and where
// the threads already sleep.
func TestContended(t *testing.T) {
	for _, c := range []struct {
		name          string
		cpus, threads int
		wait, used    float64 // the main thread's wait share outside the window; CPUs the process used
		openMPWait    string
		gpu, fires    bool
		change        string
		children      *rundir.Children // the program's own processes beside it
		windowWait    float64          // the window's wait, when not the steps'
		workersCPUs   float64          // CPUs its two DataLoader workers used, by their samples
		quota         float64          // its cgroup's CPU quota, where less than the CPUs
	}{
		// Autoformer beside two busy loops: waited 51%, used 0.95 CPUs
		{"others held the CPUs", 2, 2, 0.51, 0.95, "", false, true, "OMP_WAIT_POLICY=PASSIVE in the environment", nil, 0, 0, 0},
		{"spinning set on purpose", 2, 2, 0.51, 0.95, "OMP_WAIT_POLICY=ACTIVE", false, true, "the environment has OMP_WAIT_POLICY=ACTIVE now", nil, 0, 0, 0},
		{"quiet machine", 2, 2, 0.03, 1.9, "", false, false, "", nil, 0, 0, 0},
		{"quiet, little parallel work", 8, 8, 0.04, 1.1, "", false, false, "", nil, 0, 0, 0},
		{"its own threads held the CPUs", 2, 2, 0.3, 1.6, "", false, false, "", nil, 0, 0, 0},
		{"one thread: no OpenMP team", 2, 1, 0.5, 0.5, "", false, false, "", nil, 0, 0, 0},
		{"threads sleep already", 2, 2, 0.51, 0.95, "OMP_WAIT_POLICY=passive", false, false, "", nil, 0, 0, 0},
		{"spinning turned off", 4, 4, 0.51, 1.5, "GOMP_SPINCOUNT=0", false, false, "", nil, 0, 0, 0},
		{"the step runs on a GPU", 2, 2, 0.51, 0.95, "", true, false, "", nil, 0, 0, 0},
		{"more threads than CPUs: cpu.oversubscribed's", 2, 4, 0.51, 0.95, "", false, false, "", nil, 0, 0, 0},
		// mnist_hogwild's two trainers on 2 CPUs
		{"its own child processes held the CPUs", 2, 2, 0.45, 1.05, "", false, false, "", &rundir.Children{Processes: 2, MostAlive: 2, WallS: 27.6, CPUS: 26.9, WaitS: 26.3}, 0, 0, 0},
		// Autoformer's ten workers loading ahead before its window
		{"the steps before the window only", 2, 2, 0.3, 1.36, "", false, false, "", nil, 0.04, 0, 0},
		// two workers busy 20% of their samples each took the CPU left
		{"its DataLoader workers held the CPUs", 2, 2, 0.3, 1.2, "", false, false, "", nil, 0, 0.4, 0},
		// mnist in a cgroup whose quota is 1.5 of its 2 CPUs
		{"its cgroup's quota held it back", 2, 2, 0.28, 1.4, "", false, false, "", nil, 0, 0, 1.5},
	} {
		sched := func(wait float64) *rundir.ThreadSched {
			return &rundir.ThreadSched{WallS: 10, CPUS: 10 * (1 - wait), WaitS: 10 * wait, ProcessCPUS: 10 * c.used}
		}
		th, window := sched(c.wait), sched(cmp.Or(c.windowWait, c.wait))
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUs: c.cpus, NumThreads: c.threads, LocalRanks: 1, LoadAverage: -1, OpenMPWait: c.openMPWait, CPUQuota: c.quota},
			CPUWait: &rundir.CPUWait{Run: th, Window: window, Steps: th}, Children: c.children}
		if c.workersCPUs > 0 {
			run.Workers = &pyprofile.WorkerSummary{Processes: 2, Samples: 1000, BusyShare: c.workersCPUs / 2, CPUShare: 1}
		}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9, Host: 0.1}, usesGPU: c.gpu, d: &Diagnosis{}, in: Analyses{
			Ops: &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::addmm", HostSelfUs: 500}}}, Run: run}}
		s.contendedFinding()
		if got := len(s.d.Findings) == 1; got != c.fires {
			t.Errorf("%s: fires %v, want %v: %+v", c.name, got, c.fires, s.d.Findings)
			continue
		}
		if !c.fires {
			continue
		}
		f := s.d.Findings[0]
		if !strings.Contains(f.Change, c.change) || f.Try["omp_passive"] != "true" || f.AtStakeUs != c.wait*1000 {
			t.Errorf("%s: %s (try %v, at stake %v µs), want %q, omp_passive, the wait's %v µs", c.name, f.Change, f.Try, f.AtStakeUs, c.change, c.wait*1000)
		}
	}
}
