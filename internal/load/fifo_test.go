//go:build unix

package load

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A FIFO among the traces of a directory is skipped with a note (reading
// it would block forever); a FIFO or stdin named on the command line is
// read as a stream.
func TestPipesAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.pt.trace.json"), tiny)
	fifo := filepath.Join(dir, "b.pt.trace.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	res, err := Load([]string{dir}, Options{Budget: func(int64) {}})
	if err != nil || len(res.Traces) != 1 || len(res.Skipped) != 1 || res.Skipped[0].Path != fifo || !strings.Contains(res.Skipped[0].Err.Error(), "not a regular file") {
		t.Fatalf("err %v, traces %d, skipped %v: want a.json read and the FIFO skipped", err, len(res.Traces), res.Skipped)
	}

	// The FIFO itself, named: a writer feeds it while it is read.
	go func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.WriteString(tiny)
			f.Close()
		}
	}()
	res, err = Load([]string{fifo}, Options{Budget: func(int64) {}})
	if err != nil || len(res.Traces) != 1 || res.Traces[0].Events.Len() != 1 {
		t.Fatalf("named FIFO: err %v, result %+v", err, res)
	}

	// "-" is stdin.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func(saved *os.File) { os.Stdin = saved }(os.Stdin)
	os.Stdin = r
	go func() { w.WriteString(tiny); w.Close() }()
	res, err = Load([]string{"-"}, Options{Budget: func(int64) {}})
	if err != nil || len(res.Traces) != 1 || res.Traces[0].Events.Len() != 1 {
		t.Fatalf("stdin: err %v, failures %v", err, res.Failures)
	}
}

// Ranks come from distributedInfo, else from the worker name; a file that
// cannot be read is a failure, not a stop.
