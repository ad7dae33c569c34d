package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LockName is the file that claims a run directory for one run (it holds
// bottleneck's pid): `bottleneck run` creates it with O_EXCL, so of two
// runs given the same --output only one wins, and removes it when the run
// ends.
const LockName = ".bottleneck-run.lock"

// Interrupted explains a manifest whose state is still "running": the run
// is still going (its lock names a live bottleneck process), or bottleneck
// was killed (SIGKILL, a crash, the machine went down) before it could
// record the end; the files hold what the agent saved until then.
func Interrupted(dir string, m *Manifest) string {
	if b, err := os.ReadFile(filepath.Join(dir, LockName)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 && processAlive(pid) {
			return fmt.Sprintf("still running (bottleneck pid %d): this report shows what was saved so far", pid)
		}
	}
	return fmt.Sprintf("interrupted: bottleneck ended before the run did (killed?), started %s; "+
		"the files hold what the agent saved until then", m.Started.Format(time.RFC3339))
}

// InterruptedNote returns a one-line note naming the run directory when
// its manifest still reads "running" (see Interrupted), else "".
func (r *Run) InterruptedNote() string {
	if r.Manifest == nil || r.Manifest.State != "running" {
		return ""
	}
	return r.Dir + ": " + Interrupted(r.Dir, r.Manifest)
}

// processAlive reports whether a process with this pid exists (signal 0;
// where that cannot be asked, false).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
