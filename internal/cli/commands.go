package cli

// The subcommands, in help order. Each command package exports
// NewCmd(*iostreams.IOStreams) *cobra.Command.
func init() {
	commands = append(commands)
}
