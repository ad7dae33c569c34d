// Package serve implements `bottleneck serve`: the HTML report live from a
// local web server.
package serve

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/cli/cmdutil"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/htmlreport"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	textreport "github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/serve"
)

// Options are the command's flags and arguments.
type Options struct {
	IO    *iostreams.IOStreams
	Paths []string
	Host  string
	Port  int
	Tries int
	Top   int
	// Ready, when set, is called with the URL once the server listens
	// (tests use it).
	Ready func(url string)
}

// NewCmd returns the serve command.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: ios}, Run)
}

// newCmd parses the command line into o and hands it to runF: Run, or a
// test's recorder, so that parsing is tested without running the command.
// Usage errors are found here, before runF (exit 2).
func newCmd(o *Options, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve PATH...",
		Short: "Show the report in a browser from a local web server",
		Long: `Serve the HTML report of a run directory or of traces from a local web
server; zooming into the timeline fetches finer detail from it. Binds
127.0.0.1 by default: on a remote machine, forward the port
(ssh -L 8080:127.0.0.1:8080 host) and open the printed URL. When the port
is busy the next ones are tried. Only the report is served: no file
outside it can be read through the server.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			return runF(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Host, "host", "127.0.0.1", "address to bind (0.0.0.0: every interface)")
	cmdutil.IntRangeFlag(cmd, &o.Port, "port", 8080, 0, 65535, "port to bind (busy: the next ones are tried; 0: any free port)")
	cmdutil.IntRangeFlag(cmd, &o.Tries, "port-tries", 20, 1, 1000, "how many ports to try")
	cmdutil.NonNegativeIntFlag(cmd, &o.Top, "top", driver.DefaultTop, "rows per operator and kernel table (0: all)")
	return cmd
}

// Run executes serve with o; it returns when the server fails.
func Run(o *Options) error {
	dopts := driver.DefaultOptions()
	dopts.Table.Top = o.Top
	d, err := driver.Open(o.IO, o.Paths, dopts)
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("serve: %w", err))
	}
	if len(d.Traces) == 0 && len(d.Report.Failures) > 0 { // nothing to serve, as analyze
		return exitcode.New(exitcode.Failed, driver.NothingRead(d.Report.Failures))
	}
	if d.Status != driver.Complete { // served anyway, with what was wrong said here too
		textreport.WriteProblems(o.IO.ErrOut, d.Report)
	}
	p := serve.NewPage(d, htmlreport.Options{})
	loop := serve.IsLoopback(o.Host)
	h, err := serve.NewHandler(p, loop)
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("serve: %w", err))
	}
	l, err := serve.Listen(o.Host, o.Port, o.Tries)
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("serve: %w", err))
	}
	url := serve.URL(l, o.Host)
	fmt.Fprintf(o.IO.Out, "serving the report on %s (Ctrl-C to stop)\n", url)
	if !loop {
		fmt.Fprintf(o.IO.ErrOut, "bottleneck: warning: bound to %s, reachable from other machines\n", o.Host)
	}
	if o.Ready != nil {
		o.Ready(url)
	}
	if err := serve.Serve(l, h, o.IO.ErrOut); err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("serve: %w", err))
	}
	return nil
}
