package cli

import (
	"github.com/bottleneck-dev/bottleneck/internal/cli/analyze"
	reportcmd "github.com/bottleneck-dev/bottleneck/internal/cli/report"
	"github.com/bottleneck-dev/bottleneck/internal/cli/run"
	servecmd "github.com/bottleneck-dev/bottleneck/internal/cli/serve"
)

// The subcommands, in help order. Each command package exports
// NewCmd(*iostreams.IOStreams) *cobra.Command.
func init() {
	commands = append(commands,
		analyze.NewCmd,
		run.NewCmd,
		reportcmd.NewCmd,
		servecmd.NewCmd,
	)
}
