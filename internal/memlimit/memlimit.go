// Package memlimit holds the process's hard memory limit (--max-memory):
// the command sets it once; readers consult it and end a read with
// ErrExceeded instead of letting the Go runtime die of "out of memory".
package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

var hardLimit atomic.Int64 // 0: no limit

// ErrExceeded ends a read that would need more memory than the limit.
var ErrExceeded = errors.New("memory limit reached")

// Set makes limit (bytes; 0: none) the process's hard limit and, unless
// the user chose one with GOMEMLIMIT, its soft limit too, so the collector
// works harder before Exceeded reports true.
func Set(limit int64) {
	hardLimit.Store(limit)
	if limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
}

// Max returns the hard limit (0: none).
func Max() int64 { return hardLimit.Load() }

// SoftLimit sets a soft memory limit below the hard one, unless the user
// chose one with GOMEMLIMIT.
func SoftLimit(limit int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if m := Max(); m > 0 {
		limit = min(limit, m)
	}
	debug.SetMemoryLimit(limit)
}

var samples = []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}

// Exceeded reports whether the heap holds more than the limit allows: the
// live heap above 90% of it (the rest is room for the collector), or the
// allocated objects above all of it. The runtime's figures can be stale
// (the live heap is from the last collection, the objects include garbage),
// so an excess is confirmed by a collection before it is reported.
func Exceeded() bool {
	m := Max()
	if m <= 0 || !over(m) {
		return false
	}
	runtime.GC()
	return over(m)
}

func over(m int64) bool {
	s := make([]metrics.Sample, len(samples))
	copy(s, samples)
	metrics.Read(s)
	return value(s[0]) > m/10*9 || value(s[1]) > m
}

func value(s metrics.Sample) int64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(min(s.Value.Uint64(), math.MaxInt64))
}

// Error describes ErrExceeded with the limit and how to raise it.
func Error() error {
	return fmt.Errorf("%w (--max-memory %s; raise it or read fewer files at once)", ErrExceeded, Format(Max()))
}

// Default is three quarters of the memory this process may use (the
// machine's, or its cgroup's when lower); 0 when unknown.
func Default() int64 {
	total := machineMemory()
	if c := cgroupMemory(); c > 0 && (total == 0 || c < total) {
		total = c
	}
	return total / 4 * 3
}

func machineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

func cgroupMemory() int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && n > 0 && n < 1<<60 { // "max" or the v1 "unlimited" sentinel
			return n
		}
	}
	return 0
}

// units are the suffixes Parse accepts, longest first within a letter.
var units = []struct {
	suffix string
	scale  float64
}{
	{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
	{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
}

// Parse reads a size such as 8GiB, 512MB, 1.5G or 2000000000 (bytes);
// "0" means no limit. Single letters are binary (G = GiB).
func Parse(s string) (int64, error) {
	num, scale := strings.ToUpper(strings.TrimSpace(s)), 1.0
	for _, u := range units {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, scale = strings.TrimSpace(rest), u.scale
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsNaN(f) || f*scale >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a size (e.g. 8GiB, 512MB, 0 for no limit)", s)
	}
	return int64(f * scale), nil
}

// Format writes n bytes in --max-memory's own syntax ("8.0GiB", no
// space), so a message's value can be pasted back as the flag.
func Format(n int64) string {
	if n >= 1<<30 {
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + "GiB"
	}
	return strconv.FormatInt(n>>20, 10) + "MiB"
}

// Pacer steers the soft memory limit while inputs are read. It starts at
// a share of the expected input (the model is about a third of Kineto
// JSON, so most inputs fit it) and is raised to a quarter above the live heap
// whenever the model outgrows it (also for inputs too small for a first
// limit, below ~78 MB, once their heap passes ~26 MiB): a limit at or
// under the live heap makes the collector run cycle after cycle without
// freeing anything (a 200 MB trace with per-launch kernel args took 119
// collections instead of about 30). It never exceeds the hard limit.
// Safe for concurrent use.
//
// The two rules bound the collector's work and the process's memory: with
// the limit at least 1.25x the live heap L, each cycle leaves room for at
// least L/4 of new objects where GOGC=100 alone leaves L, so at most about
// four times its cycles (measured on 200 MB traces: 2-3x); and the input
// share keeps the peak RSS, the limit plus the binary's own pages (~11
// MiB, which the limit does not count), under half the input from about
// 100 MB on.
type Pacer struct {
	mu       sync.Mutex
	limit    int64 // the soft limit set (0: none yet)
	checked  int64 // input bytes at the last look at the live heap
	expected int64 // the input bytes expected (0: unknown)
	// unpaced: the collector is off, the soft limit alone bounding the
	// heap (a small input; see smallInput).
	unpaced bool
}

const (
	// inputShare is the first soft limit, as a share of the input. The
	// peak RSS is the heap, which stays under the limit, plus ~19 MB (the
	// binary's pages and the runtime's own memory, which the limit does
	// not count): at 0.45 a 207 MB trace's RSS reached 0.51x, at 0.43 it
	// was 0.46-0.49x, at 0.41 0.44-0.47x in most runs, in the same time
	// (200 MB corpus: 12-26 collections, 1.5-2.9x those of no limit).
	inputShare = 0.41
	// minSoftLimit: below it the runtime's own footprint dominates and a
	// limit would only cost speed. At 64 MiB inputs of 78-156 MB had no
	// limit: the 100 MB corpus's peak RSS varied up to 0.53-0.60x between
	// runs (distinct names, compact JSON) against 0.50-0.52x with one,
	// in the same time (8 interleaved runs).
	minSoftLimit = 32 << 20
	// liveCheckEvery is how much input is read between looks at the heap.
	liveCheckEvery = 16 << 20
	// analysisGCPercent is the collector's pace for the analyses: the
	// heap grows to 1.1x the live heap between collections, not Go's 2x.
	// Their short-lived scratch (up to 0.75x the model on two cores) made
	// the peak; the extra cycles cost little, the model being free of
	// pointers. Interleaved runs, median peak RSS: at 25 the 50 MB
	// corpus's fell from 0.98-1.18x to 0.81-0.99x for 1-7% more time; at
	// 10 the 100 MB corpus's fell from 25's 0.52x to 0.47x (default,
	// per-launch args) and 0.59x to 0.53x (compact JSON), for 0-9% more
	// time. Under a soft limit too: with the limit alone (1.25x the live
	// heap) 200 MB of the default shape peaked at 0.44x, at this pace
	// 0.33x, and 1 GB of per-launch args at 0.37x, at this pace 0.26x, in
	// the same time. The same pace while reading took 2-7% more for at
	// most 0.03x less RSS, so reading keeps Go's.
	analysisGCPercent = 10
	// smallInput: below it the collector is off from the first byte read
	// to the end, the heap bounded by a soft limit of the input plus
	// smallHeadroom alone. At 10% the collector's goal on a heap of a few
	// MB is a few hundred KB, so it ran a cycle every few hundred KB of
	// scratch: a third of the CPU of a 15 MB trace's analysis and 60% of
	// a 1 MB one's. At Go's pace a 15 MB trace still took 6 cycles while
	// its heap grew from 4 MB; with the limit alone it takes one, and
	// 5-15 MB traces took 0.87-0.91x the wall time at the same peak RSS
	// (21 interleaved runs each). Issue 35's target for such traces is a
	// peak RSS of 25 MB plus the file, about 19 MB of which is the
	// binary's pages and the runtime's own memory (a 1 MB trace peaks at
	// 19 MB at any pace); the limit keeps the heap in the rest (15 MB
	// trace, 12 interleaved runs: 28 MB at 10%, 41 MB at Go's pace alone,
	// 33 MB with a limit 10 MiB above the input).
	smallInput    = 24 << 20
	smallHeadroom = 12 << 20
	// smallLimitFloor: the runtime's own memory (metadata, profiling
	// buckets, stacks: ~6 MiB) counts against the soft limit too, so a 1
	// MB input's limit of 13 MiB left a heap goal of ~5 MiB, and half its
	// runs collected once in the analyses. Floored here they do not: 21
	// interleaved runs, 0.93x the wall, the same peak RSS (18 MB).
	smallLimitFloor = 18 << 20
)

// Small reports whether inputBytes of input is read and analysed under a
// soft limit alone (smallInput), where the heap stays small enough that
// forcing a collection only costs time.
func Small(inputBytes int64) bool { return inputBytes < smallInput }

// Expect sets the soft limit for inputBytes of input (raising it only);
// for a small input it turns the collector off, the limit alone bounding
// the heap (smallInput), until the input proves larger.
func (p *Pacer) Expect(inputBytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expected = max(p.expected, inputBytes)
	switch {
	case p.expected < smallInput && p.limit == 0 && !p.unpaced && os.Getenv("GOGC") == "":
		p.unpaced = true
		debug.SetGCPercent(-1)
		p.setLimit(max(p.expected+smallHeadroom, smallLimitFloor))
	case p.expected >= smallInput && p.unpaced:
		p.unpaced = false
		debug.SetGCPercent(100)
	}
	p.raise(int64(float64(inputBytes) * inputShare))
}

// Progress is told the input bytes read so far; now and then it raises the
// limit above the live heap.
func (p *Pacer) Progress(consumed int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if consumed-p.checked < liveCheckEvery {
		return
	}
	p.checked = consumed
	p.raise(liveHeap() / 4 * 5)
}

// Settle sets the pace of the analyses that follow reading
// (analysisGCPercent; for inputs under smallInput the soft limit alone),
// unless the user chose one with GOGC, and raises the soft limit, if any,
// above the live heap.
func (p *Pacer) Settle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limit > 0 {
		p.raise(liveHeap() / 4 * 5)
	}
	if os.Getenv("GOGC") != "" {
		return
	}
	if p.unpaced {
		p.setLimit(max(p.limit, liveHeap()/4*5)) // never at or under the live heap (see Pacer)
		return
	}
	debug.SetGCPercent(analysisGCPercent)
}

// setLimit sets the soft limit, below minSoftLimit too (a small input's).
func (p *Pacer) setLimit(limit int64) {
	if m := Max(); m > 0 {
		limit = min(limit, m)
	}
	p.limit = limit
	SoftLimit(limit)
}

func (p *Pacer) raise(limit int64) {
	if m := Max(); m > 0 {
		limit = min(limit, m)
	}
	if limit <= p.limit || limit < minSoftLimit {
		return
	}
	p.limit = limit
	SoftLimit(limit)
}

func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return value(s[0])
}
