//go:build !unix

package runner

import (
	"context"
	"errors"
)

// Run is not supported on this system: it needs Unix process groups and
// signals to pass Ctrl-C to the program and stop it (docs/run.md). Every
// other command works here.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	return nil, errors.New("bottleneck run needs Linux or macOS; analyze, report, serve and export work here on traces and run directories")
}
