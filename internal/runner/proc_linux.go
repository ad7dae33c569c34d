//go:build linux

package runner

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

func setProcAttr(cmd *exec.Cmd) {
	// If bottleneck dies (even by SIGKILL) the program gets SIGTERM, which
	// the agent turns into a save.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// terminalForeground reports whether this process's group is the
// foreground group of its terminal: in (stdin), else the controlling
// terminal (/dev/tty: `bottleneck run train.py < data.txt` in a shell).
// A Ctrl-C there reaches the program too, so bottleneck does not forward
// it: Python would take it twice, and the second would cut the agent's
// save short.
func terminalForeground(in any) bool {
	if f, ok := in.(*os.File); ok && foreground(f) {
		return true
	}
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false // no controlling terminal
	}
	defer tty.Close()
	return foreground(tty)
}

func foreground(f *os.File) bool {
	var pgrp int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCGPGRP), uintptr(unsafe.Pointer(&pgrp)))
	return errno == 0 && int(pgrp) == syscall.Getpgrp()
}

// killTree sends SIGKILL to pid and all its descendants (from /proc).
func killTree(pid int) {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		children[pp] = append(children[pp], p)
	}
	var walk func(int)
	seen := map[int]bool{}
	walk = func(p int) {
		if seen[p] {
			return
		}
		seen[p] = true
		_ = syscall.Kill(p, syscall.SIGKILL)
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
}
