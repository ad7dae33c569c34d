package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MissingScript is the error plain Python gives for a script that is not
// there, in its words, when cfg runs a script that does not exist ("" when
// it does, or cfg runs a module or a launcher). Python exits 2 then; so
// does run, without a run directory.
func MissingScript(cfg Config) string {
	if cfg.Mode != Script {
		return ""
	}
	p := cfg.Target
	if !filepath.IsAbs(p) && cfg.Dir != "" {
		p = filepath.Join(cfg.Dir, p)
	}
	if _, err := os.Stat(p); err == nil || !os.IsNotExist(err) {
		return ""
	}
	return fmt.Sprintf("%s: can't open file '%s': [Errno 2] No such file or directory", cfg.Python, cfg.Target)
}

// HasTorch reports whether the interpreter py finds a torch package
// (importlib's find_spec: no import, tens of ms), and false with the
// reason when it cannot tell.
func HasTorch(py string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-I", "-c", "import importlib.util as u; print(u.find_spec('torch') is not None)")
	out, err := cmd.Output()
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(out)) == "True", nil
}

// TorchPythons are interpreters near the user that have torch, for a
// program run with one that has not: the active virtualenv's or conda
// environment's, and ./.venv, ./venv, ./env (most likely first).
func TorchPythons(dir string) []string {
	var cands []string
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if v := os.Getenv(env); v != "" {
			cands = append(cands, filepath.Join(v, "bin", "python"))
		}
	}
	for _, d := range []string{".venv", "venv", "env"} {
		cands = append(cands, filepath.Join(dir, d, "bin", "python"))
	}
	var out []string
	for _, p := range cands {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			continue
		}
		if ok, _ := HasTorch(p); ok && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
