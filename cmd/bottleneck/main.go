// Command bottleneck tells PyTorch users why their program is slow.
package main

import (
	"os"

	"github.com/bottleneck-dev/bottleneck/internal/cli"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

func main() {
	os.Exit(cli.Main(iostreams.System(), os.Args[1:]))
}
