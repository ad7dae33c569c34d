package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/live"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/serve"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// livePlainEvery: with --live and a stderr that is not a terminal, one
// plain line this often (and the last one when the program ends).
const livePlainEvery = 5 * time.Second

// liveGrace: --live=web serves the final report this long after the run
// ended (Ctrl-C ends it sooner).
const liveGrace = time.Minute

// liveView is `run --live`: it turns the runner's snapshot files into
// the view and draws it as the terminal region (status), plain lines
// (plain) or pages (web).
type liveView struct {
	title string

	mu     sync.Mutex
	status *iostreams.StatusLine // a terminal: the frame, then the phase
	phase  string
	plain  io.Writer // not a terminal
	every  time.Duration
	next   time.Time
	last   string // the last plain line written
	web    *live.Server
	warned bool
	errOut io.Writer

	// dir is the run directory, where the first window's trace is
	// diagnosed once written (analysing: under way; window: the result)
	dir         string
	analysing   bool
	window      *live.WindowVerdict
	windowShown bool // the plain line of it was written
}

// update is runner.Config.Live.
func (lv *liveView) update(files map[string][]byte) {
	tags := make([]string, 0, len(files))
	for t := range files {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	var snaps []*live.Snapshot
	for _, t := range tags {
		s, err := live.Parse(filepath.Join(rundir.LiveDirName, t+".json"), files[t])
		if err != nil {
			lv.warnOnce(err)
			continue
		}
		snaps = append(snaps, s)
	}
	v := live.Build(lv.title, snaps)
	lv.mu.Lock()
	defer lv.mu.Unlock()
	lv.diagnoseWindow()
	v.Window = lv.window
	switch {
	case lv.web != nil:
		lv.web.Publish(v)
	case lv.status != nil:
		lines := live.Frame(v, 1<<10) // StatusLine cuts them to the terminal
		if lv.phase != "" {
			lines = append(lines, "bottleneck: "+lv.phase)
		}
		lv.status.UpdateLines(lines...)
	case lv.plain != nil && len(v.Ranks) > 0:
		if v.Window != nil && !lv.windowShown { // once: a log gets it in a line of its own
			lv.windowShown = true
			fmt.Fprintln(lv.plain, "bottleneck live: "+v.Window.Text())
		}
		if now := time.Now(); now.After(lv.next) || v.Ended {
			if l := live.Line(v); l != lv.last {
				lv.next, lv.last = now.Add(lv.every), l
				fmt.Fprintln(lv.plain, l)
			}
		}
	}
}

// diagnoseWindow starts, once, the diagnosis of the first window trace
// the run directory holds: the report's engine on the window alone, in
// the background while the program goes on (an analysis of a small
// trace, once: a fraction of a second of one CPU). lv.mu is held.
func (lv *liveView) diagnoseWindow() {
	if lv.dir == "" || lv.analysing {
		return
	}
	entries, _ := os.ReadDir(lv.dir)
	for _, e := range entries {
		kind, tag := rundir.FileKind(e.Name())
		if kind != rundir.KindTrace || strings.Contains(e.Name(), ".tmp") {
			continue
		}
		lv.analysing = true
		go func() {
			w, err := windowVerdict(lv.dir, filepath.Join(lv.dir, e.Name()), tag)
			if err != nil {
				lv.warnOnce(fmt.Errorf("the window's diagnosis: %w", err))
				return
			}
			lv.mu.Lock()
			lv.window = w
			lv.mu.Unlock()
		}()
		return
	}
}

// windowVerdict diagnoses one window's trace: with the run's evidence so
// far (the agent writes it when a window closes: its loaders, settings
// and step times) when the run directory reads as one with this trace
// alone, else the trace by itself.
func windowVerdict(dir, path, tag string) (*live.WindowVerdict, error) {
	quiet := &iostreams.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	d, err := driver.Open(quiet, []string{dir}, driver.DefaultOptions())
	if err != nil || len(d.Report.Traces) != 1 || d.Report.Traces[0].Diagnosis == nil {
		if d, err = driver.Open(quiet, []string{path}, driver.DefaultOptions()); err != nil {
			return nil, err
		}
	}
	if len(d.Report.Traces) != 1 || d.Report.Traces[0].Diagnosis == nil {
		return nil, fmt.Errorf("%s: no diagnosis", filepath.Base(path))
	}
	dg := d.Report.Traces[0].Diagnosis
	w := &live.WindowVerdict{Tag: tag, Class: string(dg.Verdict.Primary), SharePct: dg.Verdict.SharePct, Confidence: dg.Verdict.Confidence}
	if n := dg.Window; n != nil && len(n.UsedSteps) > 0 {
		w.Steps = n.UsedSteps[0] + "-" + n.UsedSteps[len(n.UsedSteps)-1]
	}
	if dg.Verdict.Primary == diagnose.Undetermined {
		w.Why = dg.Verdict.Why
	}
	if len(dg.Findings) > 0 {
		w.Change, w.SavingPct = dg.Findings[0].Change, dg.Findings[0].SavingPct
	}
	return w, nil
}

// setPhase is runner.Config.Progress on a terminal: the phase is the
// frame's last line.
func (lv *liveView) setPhase(s string) {
	lv.mu.Lock()
	lv.phase = s
	lv.mu.Unlock()
}

func (lv *liveView) warnOnce(err error) {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if !lv.warned && lv.errOut != nil {
		lv.warned = true
		fmt.Fprintf(lv.errOut, "bottleneck: live view: %v\n", err)
	}
}

// startLiveWeb binds the --live=web server before the program starts (a
// busy port fails the command, not the run) and prints its address.
func startLiveWeb(o *Options, lv *liveView) (stop func(), url string, err error) {
	loop := serve.IsLoopback(o.LiveHost)
	lv.web = live.NewServer(loop)
	l, err := serve.Listen(o.LiveHost, o.LivePort, 1)
	if err != nil {
		return nil, "", fmt.Errorf("--live=web: %w", err)
	}
	url = serve.URL(l, o.LiveHost)
	srv := &http.Server{Handler: lv.web, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			fmt.Fprintf(o.IO.ErrOut, "bottleneck: live view: %v\n", err)
		}
	}()
	fmt.Fprintf(o.IO.ErrOut, "bottleneck: live view on %s (the report replaces it when the run ends)\n", url)
	if !loop {
		fmt.Fprintf(o.IO.ErrOut, "bottleneck: warning: bound to %s, reachable from other machines\n", o.LiveHost)
	}
	if o.liveReady != nil {
		o.liveReady(url)
	}
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx) // open event streams end when the report is in
		_ = srv.Close()
	}
	return stop, url, nil
}

// finishLiveWeb puts the report at the live view's address, and serves it
// for the grace period or until a signal.
func finishLiveWeb(o *Options, lv *liveView, url, dir string, sigs <-chan os.Signal) {
	lv.web.Finish(filepath.Join(dir, rundir.ReportHTML), filepath.Join(dir, rundir.ReportText))
	grace := liveGrace
	if o.liveGrace != 0 {
		grace = o.liveGrace
	}
	fmt.Fprintf(o.IO.ErrOut, "bottleneck: the report is on %s for %s more (Ctrl-C to stop)\n", url, units.Seconds(grace.Seconds()))
	select {
	case <-sigs:
	case <-time.After(grace):
	}
}
