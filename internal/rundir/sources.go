package rundir

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
)

// SourcesDirName holds a copy of the program's own source files as they
// were when it ran: those its sampled frames name with their line's text
// (the agent gives it for the program's files, not a library's). Some
// questions the diagnosis reads from the code (is this forward under
// torch.no_grad, does this call feed the backward), and a run directory
// read on another machine, or after the program changed, must answer
// them as the run would: pytorch/examples' GCN lost its finding that
// evaluations ran every epoch once its source was gone.
const SourcesDirName = "sources"

// Bounds of the copy: files beyond them are read where they are, if at all.
const (
	maxSources      = 100
	maxSourceBytes  = 1 << 20
	maxSourcesBytes = 16 << 20
)

// SourcePath is where dir keeps its copy of file, a path the program ran
// from (made relative and cleaned: a name from the program cannot reach
// outside dir/sources).
func SourcePath(dir, file string) string {
	rel := filepath.ToSlash(filepath.Clean("/" + strings.ReplaceAll(filepath.ToSlash(file), ":", "")))
	return filepath.Join(dir, SourcesDirName, filepath.FromSlash(strings.TrimPrefix(rel, "/")))
}

// SaveSources copies into dir the program's own source files that the
// run's Python profiles (each process's and its DataLoader workers') name,
// within the bounds above; a file that cannot be read is left out. It
// returns how many files it copied.
func SaveSources(dir string) (int, error) {
	r, err := Read(dir)
	if err != nil {
		return 0, err
	}
	seen := map[string]bool{}
	var files []string
	own := func(p *pyprofile.Profile) {
		if p == nil {
			return
		}
		for _, f := range p.Frames {
			if f.Text != "" && filepath.IsAbs(f.File) && !seen[f.File] {
				seen[f.File] = true
				files = append(files, f.File)
			}
		}
	}
	for _, p := range r.Processes {
		own(p.Profile)
		if p.Workers != nil {
			own(p.Workers.Profile)
		}
	}
	n, total := 0, int64(0)
	for _, f := range files {
		if n == maxSources {
			break
		}
		info, err := os.Stat(f)
		if err != nil || !info.Mode().IsRegular() || info.Size() > maxSourceBytes || total+info.Size() > maxSourcesBytes {
			continue
		}
		if err := copyFile(f, SourcePath(dir, f)); err != nil {
			return n, err
		}
		n++
		total += info.Size()
	}
	return n, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return nil // gone since the run: read where it is, if at all
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.LimitReader(in, maxSourceBytes)); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
