// Command bottleneck tells PyTorch users why their program is slow.
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/bottleneck-dev/bottleneck/internal/cli"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

func main() {
	os.Exit(profiled(func() int { return cli.Main(iostreams.System(), os.Args[1:]) }))
}

// profiled runs main, writing a CPU profile to $BOTTLENECK_CPUPROFILE and
// a heap profile (at the end) to $BOTTLENECK_MEMPROFILE when they are set,
// so a slow trace can be profiled without patching the binary
// (docs/analyze.md, Performance).
func profiled(main func() int) int {
	if path := os.Getenv("BOTTLENECK_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bottleneck: BOTTLENECK_CPUPROFILE:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bottleneck: BOTTLENECK_CPUPROFILE:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	code := main()
	if path := os.Getenv("BOTTLENECK_MEMPROFILE"); path != "" {
		runtime.GC() // up-to-date statistics
		f, err := os.Create(path)
		if err == nil {
			err = pprof.WriteHeapProfile(f)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bottleneck: BOTTLENECK_MEMPROFILE:", err)
		}
	}
	return code
}
