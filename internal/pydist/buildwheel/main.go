// Command buildwheel builds the bottleneck-profiler wheels (internal/pydist):
//
//	go run ./internal/pydist/buildwheel [-o dist] [-platform host|all|GOOS/GOARCH]
//
// Run from anywhere inside the repository; scripts/build-wheel wraps it.
// SOURCE_DATE_EPOCH, when set, stamps the zip entries.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/pydist"
)

func main() {
	out := flag.String("o", "dist", "output directory")
	plat := flag.String("platform", "host", "host, all, or GOOS/GOARCH (one of the wheel platforms)")
	flag.Parse()
	if err := run(*out, *plat); err != nil {
		fmt.Fprintln(os.Stderr, "buildwheel:", err)
		os.Exit(1)
	}
}

func run(out, plat string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	stamp, err := sourceDate()
	if err != nil {
		return err
	}
	var targets []pydist.Platform
	switch plat {
	case "all":
		targets = pydist.Platforms
	case "host":
		p, ok := pydist.HostPlatform()
		if !ok {
			return errors.New("no wheel platform for this machine; pass -platform GOOS/GOARCH")
		}
		targets = []pydist.Platform{p}
	default:
		p, ok := pydist.FindPlatform(plat)
		if !ok {
			return fmt.Errorf("-platform %q: not a wheel platform", plat)
		}
		targets = []pydist.Platform{p}
	}
	for _, p := range targets {
		w, err := pydist.Build(pydist.Options{Root: root, OutDir: out, Platform: p, Time: stamp})
		if err != nil {
			return err
		}
		fmt.Println(w)
	}
	return nil
}

func repoRoot() (string, error) {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(b))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run inside the bottleneck repository")
	}
	return filepath.Dir(mod), nil
}

// sourceDate is SOURCE_DATE_EPOCH (reproducible-builds.org), else 1980-01-01,
// the earliest time a zip entry can carry.
func sourceDate() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", s, err)
	}
	return time.Unix(n, 0).UTC(), nil
}
