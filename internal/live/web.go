package live

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/serve"
)

//go:embed page.html
var page []byte

// Server is `run --live=web`: while the program runs, / is a page that
// draws the view from /events (server-sent events: an event "view" with
// the View as JSON at every change, "done" when the run's report is
// ready); once Finish was called, / is the run's HTML report. /view.json
// is the latest View.
type Server struct {
	// Loopback refuses requests whose Host header names another host
	// (DNS rebinding), as `bottleneck serve` does when bound to loopback.
	Loopback bool

	mu      sync.Mutex
	view    []byte
	changed chan struct{} // closed and replaced at each change
	report  []byte        // the final page; nil while the program runs
	rtype   string
}

// NewServer returns a server with an empty view.
func NewServer(loopback bool) *Server {
	b, _ := json.Marshal(View{})
	return &Server{Loopback: loopback, view: b, changed: make(chan struct{})}
}

// Publish makes v the view every client gets next.
func (s *Server) Publish(v View) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.report != nil || string(b) == string(s.view) {
		return
	}
	s.view = b
	close(s.changed)
	s.changed = make(chan struct{})
}

// Finish replaces the live page with the report at reportHTML, or with
// the text report at reportText when there is no HTML one (a run with no
// trace), and tells the open pages to reload.
func (s *Server) Finish(reportHTML, reportText string) {
	b, err := os.ReadFile(reportHTML)
	ctype := "text/html; charset=utf-8"
	if err != nil {
		if b, err = os.ReadFile(reportText); err != nil {
			b = []byte(fmt.Sprintf("The run ended; its report could not be read: %v\n", err))
		}
		ctype = "text/plain; charset=utf-8"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report, s.rtype = b, ctype
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	if s.Loopback && !serve.IsLoopback(r.Host) {
		http.Error(w, "forbidden host", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	view, report, rtype := s.view, s.report, s.rtype
	s.mu.Unlock()
	switch r.URL.Path {
	case "/", "/index.html":
		if report != nil {
			send(w, rtype, report)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'")
		send(w, "text/html; charset=utf-8", page)
	case "/view.json":
		send(w, "application/json", view)
	case "/events":
		s.events(w, r)
	default:
		http.NotFound(w, r)
	}
}

func send(w http.ResponseWriter, ctype string, b []byte) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// keepAlive: a comment line this often keeps proxies from closing an
// idle stream.
const keepAlive = 15 * time.Second

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	var sent []byte
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		s.mu.Lock()
		view, done, changed := s.view, s.report != nil, s.changed
		s.mu.Unlock()
		if done {
			fmt.Fprint(w, "event: done\ndata: {}\n\n")
			fl.Flush()
			return
		}
		if string(view) != string(sent) {
			fmt.Fprintf(w, "event: view\ndata: %s\n\n", view) // JSON has no newline
			fl.Flush()
			sent = view
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		}
	}
}
