package cli

import (
	"github.com/bottleneck-dev/bottleneck/internal/cli/analyze"
	"github.com/bottleneck-dev/bottleneck/internal/cli/run"
)

// The subcommands, in help order. Each command package exports
// NewCmd(*iostreams.IOStreams) *cobra.Command.
func init() {
	commands = append(commands,
		analyze.NewCmd,
		run.NewCmd,
	)
}
