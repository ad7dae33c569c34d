package cli

import (
	"github.com/bottleneck-dev/bottleneck/internal/cli/analyze"
	"github.com/bottleneck-dev/bottleneck/internal/cli/export"
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
		export.NewCmd,
		reportcmd.NewCmd,
		servecmd.NewCmd,
	)
}
