package diagnose

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
)

// threadEnv returns the environment variable that set torch's thread
// count and its value ("" when none did, when the program called
// torch.set_num_threads, which overrides it, or when torch runs another
// count than the variable asks: some builds cap it at the cores).
func (s *state) threadEnv() (name string, value int) {
	r := s.in.Run
	if r == nil || r.SetThreads != nil || r.Env == nil {
		return "", 0
	}
	for _, k := range runevidence.ThreadEnvVars {
		v, ok := r.ThreadEnv[k]
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n == r.Env.NumThreads {
			return k, n
		}
		return "", 0 // the first one set is the one ATen read
	}
	return "", 0
}

// threadSource says where torch's thread count came from ("" unknown: the
// default, one per CPU).
func (s *state) threadSource() string {
	if r := s.in.Run; r != nil && r.SetThreads != nil {
		return fmt.Sprintf("torch.set_num_threads at %s:%d", r.SetThreads.File, r.SetThreads.Line)
	}
	if k, v := s.threadEnv(); k != "" {
		return fmt.Sprintf("%s=%d in the environment (the program does not call torch.set_num_threads)", k, v)
	}
	return ""
}

// threadKnob is how to give torch n intra-op threads, through what set
// the count now.
func (s *state) threadKnob(n int) string {
	if k, v := s.threadEnv(); k != "" {
		return fmt.Sprintf("%s=%d in the environment holds torch to its count: set %s=%d (or unset it)", k, v, k, n)
	}
	return fmt.Sprintf("torch.set_num_threads(%d) (or OMP_NUM_THREADS=%d)", n, n)
}

// threadSetting points at what set torch's thread count: the program's
// last torch.set_num_threads call (run evidence), else the environment
// variable; none for the default.
func (s *state) threadSetting() []Location {
	r := s.in.Run
	if r == nil {
		return nil
	}
	if c := r.SetThreads; c != nil {
		return []Location{{Kind: "python", Name: c.Func, File: c.File, Line: c.Line, Note: "torch.set_num_threads(" + callValue(c.Value) + ")"}}
	}
	if k, v := s.threadEnv(); k != "" {
		return []Location{{Kind: "env", Name: k, Note: fmt.Sprintf("%s=%d sets torch's intra-op threads (no torch.set_num_threads call)", k, v)}}
	}
	return nil
}

// interopSetting points at the program's torch.set_num_interop_threads
// call: inter-op threads run ops in parallel (torch.jit.fork) and want
// CPUs of their own then.
func (s *state) interopSetting() []Location {
	r := s.in.Run
	if r == nil || r.SetInteropThreads == nil {
		return nil
	}
	c := r.SetInteropThreads
	return []Location{{Kind: "python", Name: c.Func, File: c.File, Line: c.Line,
		Note: "torch.set_num_interop_threads(" + callValue(c.Value) + "): inter-op threads, busy only when ops run in parallel (torch.jit.fork)"}}
}

func callValue(v *int) string {
	if v == nil {
		return "?"
	}
	return strconv.Itoa(*v)
}
