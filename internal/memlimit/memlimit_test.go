package memlimit

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "2000000000": 2000000000, "8GiB": 8 << 30, "8gib": 8 << 30, "512MB": 512e6,
		"1.5G": 3 << 29, "64 MiB": 64 << 20, "100KB": 100e3, "7B": 7,
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1GiB", "NaN", "1e30GiB", "GiB"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", in, got)
		}
	}
}

func TestDefaultIsAShareOfTheMachine(t *testing.T) {
	d, m := Default(), machineMemory()
	if m == 0 {
		t.Skip("no /proc/meminfo")
	}
	if d <= 0 || d > m {
		t.Errorf("default %d, machine %d: want a positive share of it", d, m)
	}
}

func TestExceededOnlyWithALimit(t *testing.T) {
	Set(0)
	if Exceeded() {
		t.Error("no limit, yet exceeded")
	}
	hardLimit.Store(1) // without touching the runtime's soft limit
	defer hardLimit.Store(0)
	if !Exceeded() {
		t.Error("a 1-byte limit is not exceeded")
	}
}

// The soft limit starts at a share of the input and is raised above the
// live heap when the model outgrows it, never above the hard limit.
func TestPacerStaysAboveTheLiveHeap(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT set")
	}
	defer debug.SetMemoryLimit(math.MaxInt64)
	defer Set(0)
	Set(0)
	var p Pacer
	p.Expect(200 << 20)
	if got, want := debug.SetMemoryLimit(-1), int64(200<<20*inputShare); got != want {
		t.Fatalf("first soft limit %d MiB, want %.2f x 200 MiB = %d MiB", got>>20, inputShare, want>>20)
	}
	live := make([]byte, 160<<20) // a model larger than the first limit
	for i := range live {
		live[i] = 1
	}
	runtime.GC()
	p.Progress(liveCheckEvery)
	if got, want := debug.SetMemoryLimit(-1), int64(len(live))/4*5; got < want {
		t.Errorf("soft limit %d MiB with %d MiB live, want at least %d MiB", got>>20, len(live)>>20, want>>20)
	}
	hardLimit.Store(200 << 20)
	defer hardLimit.Store(0)
	var capped Pacer
	capped.Expect(1 << 30)
	capped.Progress(liveCheckEvery)
	runtime.KeepAlive(live)
	if got := debug.SetMemoryLimit(-1); got != 200<<20 {
		t.Errorf("soft limit %d MiB, want the 200 MiB hard limit", got>>20)
	}
}

// Settle sets the analyses' pace, with a soft limit or without, unless
// the user chose one with GOGC; a small input is read and analysed with
// the collector off under a soft limit of the input plus smallHeadroom,
// until it proves larger.
func TestSettleSetsTheAnalysesPace(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	var p Pacer
	p.Expect(40 << 20) // too small for a first limit, too large to be small
	p.Settle()
	if got := debug.SetGCPercent(100); got != analysisGCPercent {
		t.Errorf("GC percent %d after Settle without a limit, want %d", got, analysisGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(math.MaxInt64)
		var limited Pacer
		limited.Expect(1 << 30) // a first limit
		limited.Settle()
		if got := debug.SetGCPercent(100); got != analysisGCPercent {
			t.Errorf("GC percent %d after Settle with a limit, want %d", got, analysisGCPercent)
		}
		debug.SetGCPercent(analysisGCPercent)
		debug.SetMemoryLimit(math.MaxInt64)
		var small Pacer
		small.Expect(smallInput - 1)
		if got := debug.SetGCPercent(-1); got != -1 {
			t.Errorf("GC percent %d while reading a small input, want -1 (off)", got)
		}
		small.Settle()
		if got := debug.SetGCPercent(100); got != -1 {
			t.Errorf("GC percent %d after Settle on a small input, want -1 (off)", got)
		}
		if got, want := debug.SetMemoryLimit(-1), int64(smallInput-1+smallHeadroom); got < want {
			t.Errorf("soft limit %d MiB on a small input, want at least %d MiB", got>>20, want>>20)
		}
		debug.SetMemoryLimit(math.MaxInt64)
		var tiny Pacer
		tiny.Expect(1 << 20)
		tiny.Settle()
		if got := debug.SetMemoryLimit(-1); got < smallLimitFloor {
			t.Errorf("soft limit %d MiB on a 1 MiB input, want at least %d MiB", got>>20, smallLimitFloor>>20)
		}
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		var grown Pacer // a compressed input whose estimate fell short
		grown.Expect(1 << 20)
		grown.Expect(smallInput)
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("GC percent %d once the input proved larger than small, want Go's 100", got)
		}
		grown.Settle()
		if got := debug.SetGCPercent(100); got != analysisGCPercent {
			t.Errorf("GC percent %d after Settle on the grown input, want %d", got, analysisGCPercent)
		}
	}
	t.Setenv("GOGC", "80")
	var user Pacer
	user.Expect(1 << 20)
	user.Settle()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent %d with GOGC set, want it left at 100", got)
	}
}
