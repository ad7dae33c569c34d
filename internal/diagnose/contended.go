package diagnose

import (
	"fmt"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

var _ = addRule(Rule{
	ID: "cpu.contended", Class: CPUCompute, Factor: 0.4,
	When:   "run evidence, CPU steps (cpu.native's share >= MinFinding) on >= 2 intra-op threads that do not outnumber the CPUs with the busy DataLoader workers (else cpu.oversubscribed): the main thread waited for a CPU >= CPUWaitNote of the steps outside the profiler's window (of the window where they were not measured) while other processes held the CPUs (the program left them a CPU: the process, its child processes and its DataLoader workers, by their samples, used all CPUs but half of one or more over the steps outside the window, all but one over the window), and the environment does not already make OpenMP's threads sleep; at stake: that wait, at most the native ops' share; saving: 40% of it (three programs beside two busy loops on 2 CPUs measured 30-63% of their wait)",
	Change: "other processes hold the CPUs, and torch's OpenMP threads spin on a CPU while they wait for work, turns taken from the thread with work to do: OMP_WAIT_POLICY=PASSIVE in the environment before Python starts lets them sleep instead; or run where the CPUs are free",
	detect: (*state).contendedFinding,
	Fires:  "TestContended", Silent: "TestContended",
})

// contendedFinding: the machine's other processes take CPUs the program's
// intra-op threads need, and the OpenMP runtime's threads spin while they
// wait for work (libgomp spins about 300,000 times before it sleeps). A
// spinning thread takes a CPU from the thread that has the work, and the
// barrier at each op's end waits for whichever thread was descheduled:
// thuml's Autoformer on 2 CPUs, beside two busy loops, took 4.1-4.4 s a
// step, 3.8-4.0 s on one thread, and 2.5-2.6 s with OMP_WAIT_POLICY=PASSIVE
// (1.48 s on the quiet machine, where passive threads cost it about 3%:
// the finding needs the measured wait).
func (s *state) contendedFinding() {
	d, ok := s.cpuDemand()
	cw := s.cpuWait()
	if !ok || cw == nil || d.opThreads < 2 || d.oversubscribed() || s.share[CPUCompute] < s.p.MinFinding || sleepingOpenMP(s.in.Run.Env.OpenMPWait) {
		return
	}
	// the wait must show in the window too: the steps before it may be
	// the start's, when the program's own DataLoader workers load ahead
	// (Autoformer's ten: its main thread waited 30% of the steps outside
	// its window, 4% of the window's)
	cause, others, span, where := s.cpuWaitHolders()
	wait := span.WaitShare()
	if !others || wait < s.p.CPUWaitNote || cw.Window.WaitShare() < s.p.CPUWaitNote {
		return
	}
	title := fmt.Sprintf("Other processes hold the CPUs: the main thread waited for one %.0f%% of the steps, and torch's %d OpenMP threads spin while they wait for work", pct(wait), d.threads)
	ms := []Evidence{
		{"main thread waiting for a CPU (" + where + ")", pct(wait), "%", "evidence"},
		{"CPUs this process used (" + where + ", its DataLoader workers aside)", span.ProcessCPUS / span.WallS, "", "evidence"},
		{"usable CPUs", float64(d.cpus), "", "env"},
		{"intra-op threads per process", float64(d.threads), "", "env"},
	}
	if span.LoadAverage != nil {
		ms = append(ms, Evidence{"machine load average (" + where + ")", *span.LoadAverage, "", "evidence"})
	}
	change := strings.Replace(rule("cpu.contended").Change, "other processes hold the CPUs", cause, 1) + "; on a quiet machine passive threads cost up to a few percent (Autoformer 3%, mnist's CNN nothing), so set it where the machine is shared"
	if w := s.in.Run.Env.OpenMPWait; w != "" {
		change += "; the environment has " + w + " now"
	}
	f := s.finding("cpu.contended", title, min(wait, s.share[CPUCompute])*s.step, ms, s.threadSetting(), change)
	f.Try = map[string]string{"omp_passive": "true"}
	s.emit(f)
}

// sleepingOpenMP: the environment's OpenMP settings (runevidence.Env's
// OpenMPWait) already make its threads sleep when they wait.
func sleepingOpenMP(settings string) bool {
	for _, kv := range strings.Fields(settings) {
		switch strings.ToUpper(kv) {
		case strings.ToUpper(rundir.OMPPassiveEnv), "GOMP_SPINCOUNT=0", "KMP_BLOCKTIME=0":
			return true
		}
	}
	return false
}
