// Command bottleneck-gentrace writes a synthetic PyTorch profiler trace
// (Kineto JSON) of a chosen size, for tests and benchmarks:
//
//	bottleneck-gentrace -size 1GB -seed 7 -o trace.json
//	bottleneck-gentrace -size 200MB -gzip -o trace.json.gz
//	bottleneck-gentrace -replicate real.pt.trace.json.gz -size 500MB -o big.json
//
// -replicate grows a real trace instead, by repeating its events with
// shifted times, ids and step numbers (tracegen.Replicate): a shape the
// generator did not invent.
//
// The same flags always give the same bytes. A summary of what was written
// (the ground truth: events per category, kernels, steps) goes to stderr,
// or to stdout as JSON with -stats-json.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/tracegen"
	"github.com/klauspost/compress/gzip"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bottleneck-gentrace:", err)
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bottleneck-gentrace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	size := fs.String("size", "1GB", "approximate uncompressed size (e.g. 500KB, 200MB, 1GB, 10GB; units are powers of 1024)")
	seed := fs.Int64("seed", 1, "random seed: the same seed and flags give the same bytes")
	steps := fs.Int("steps", 0, "number of ProfilerStep#N ranges (0: one per ~64 MB, at least 2)")
	devices := fs.Int("devices", 1, "number of GPUs, 1 or 2")
	world := fs.Int("world-size", 2, "DDP world size recorded in the trace (1: no communication)")
	perLaunch := fs.Bool("per-launch-args", false, "give every kernel launch its own grid, blocks/warps per SM and occupancy (as on real GPUs)")
	distinct := fs.Bool("distinct-names", false, "give every CPU op a name of its own (many distinct strings)")
	tiny := fs.Bool("tiny-events", false, "put small Python frames before every leaf op (many events per MB)")
	opsPerStep := fs.Int("ops-per-step", 0, "make every step a short loop of this many ops, a few KB a step (-size is then ignored; set -steps)")
	layout := fs.String("layout", "", "JSON layout: compact (one line, no spaces) or indent (one member per line, as json.dump(indent=2)); default Kineto's")
	gz := fs.Bool("gzip", false, "gzip the output")
	level := fs.Int("gzip-level", 0, "gzip level 1-9 (0: default)")
	replicate := fs.String("replicate", "", "grow this real trace (plain or gzipped JSON) to -size instead of generating one; -gzip applies, the shape flags do not")
	out := fs.String("o", "", "output file (default stdout)")
	statsJSON := fs.Bool("stats-json", false, "print the ground truth as JSON on stdout (requires -o)")
	quiet := fs.Bool("q", false, "print nothing on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	target, err := parseSize(*size)
	if err != nil {
		return err
	}
	if *statsJSON && *out == "" {
		return errors.New("-stats-json needs -o (stdout carries the trace)")
	}
	opt := tracegen.Options{
		TargetBytes: target, Seed: *seed, Steps: *steps, Devices: *devices,
		WorldSize: *world, Gzip: *gz, GzipLevel: *level, PerLaunchArgs: *perLaunch, DistinctNames: *distinct,
		TinyEvents: *tiny, Layout: tracegen.Layout(*layout), OpsPerStep: *opsPerStep,
	}

	if err := opt.Check(); err != nil {
		return err
	}

	var w io.Writer = stdout
	var f *os.File
	removeOnError := false
	if *out != "" && *out != "-" {
		// Only a regular file that this run created or truncated is
		// removed on failure (never /dev/null or a pipe).
		if fi, err := os.Stat(*out); err != nil || fi.Mode().IsRegular() {
			removeOnError = true
		}
		f, err = os.Create(*out)
		if err != nil {
			return err
		}
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	start := time.Now()
	var st tracegen.Stats
	var rst tracegen.ReplicaStats
	if *replicate != "" {
		rst, err = replicateFile(bw, *replicate, target, *gz, *level)
	} else {
		st, err = tracegen.Generate(bw, opt)
	}
	if err == nil {
		err = bw.Flush()
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		if removeOnError {
			os.Remove(*out)
		}
		return err
	}
	elapsed := time.Since(start)
	if *statsJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		var v any = st
		if *replicate != "" {
			v = rst
		}
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	if !*quiet && *replicate != "" {
		fmt.Fprintf(stderr, "wrote %.1f MB of JSON in %.2fs: %d copies of %s's %d events (%d events)\n",
			float64(rst.Bytes)/1e6, elapsed.Seconds(), rst.Copies, *replicate, rst.SourceEvents, rst.Events)
	} else if !*quiet {
		summary(stderr, st, elapsed, *gz)
	}
	return nil
}

// replicateFile writes path's trace grown to target bytes of JSON, gzipped
// when gz.
func replicateFile(w io.Writer, path string, target int64, gz bool, level int) (tracegen.ReplicaStats, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return tracegen.ReplicaStats{}, err
	}
	if bytes.HasPrefix(src, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err == nil {
			src, err = io.ReadAll(zr)
		}
		if err != nil {
			return tracegen.ReplicaStats{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	if !gz {
		st, err := tracegen.Replicate(w, src, target)
		if err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return st, err
	}
	if level == 0 {
		level = gzip.DefaultCompression
	}
	zw, err := gzip.NewWriterLevel(w, level)
	if err != nil {
		return tracegen.ReplicaStats{}, err
	}
	st, err := tracegen.Replicate(zw, src, target)
	if err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	return st, zw.Close()
}

func summary(w io.Writer, st tracegen.Stats, d time.Duration, gz bool) {
	mb := float64(st.Bytes) / 1e6
	fmt.Fprintf(w, "wrote %.1f MB of JSON", mb)
	if gz {
		fmt.Fprintf(w, " (%.1f MB gzipped)", float64(st.CompressedBytes)/1e6)
	}
	fmt.Fprintf(w, " in %.2fs (%.0f MB/s): %d events, %d steps x %d micro-batches x %d layers, %d device(s)\n",
		d.Seconds(), mb/d.Seconds(), st.Events, len(st.Steps), st.MicroBatches, st.Layers, st.Devices)
	cats := make([]string, 0, len(st.ByCategory))
	for c := range st.ByCategory {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	var parts []string
	for _, c := range cats {
		name := c
		if name == "" {
			name = "(no cat)"
		}
		parts = append(parts, fmt.Sprintf("%s=%d", name, st.ByCategory[c]))
	}
	fmt.Fprintf(w, "  %s\n", strings.Join(parts, " "))
}

// parseSize reads "1GB", "200MB", "500KB", "123" (bytes); K/M/G/T and the
// IEC spellings (MiB) all mean powers of 1024.
func parseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10},
		{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
		{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suf) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suf)), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("bad size %q (want e.g. 500KB, 200MB, 1GB)", s)
	}
	return int64(v * float64(mult)), nil
}
