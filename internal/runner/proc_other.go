//go:build unix && !linux

package runner

import (
	"os/exec"
	"syscall"
)

func setProcAttr(cmd *exec.Cmd) {}

func terminalForeground(in any) bool { return false }

func killTree(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }
