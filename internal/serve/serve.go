// Package serve is the live form of the HTML report: it loads traces or a
// run directory once, keeps the trace models in memory, and serves the
// report page, its assets, its data and finer timeline windows from a
// local web server.
//
// It serves a fixed set of routes and never opens a file on a request, so
// no request can read anything outside the report (no path is ever joined
// with a request's path). Requests whose Host header names another host are
// refused while bound to loopback (DNS rebinding).
package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/htmlreport"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Page is a loaded report: the page data and the traces behind it.
type Page struct {
	Data   *htmlreport.Data
	Traces []*trace.Trace // aligned with Data.Views (nil where not loaded)
}

// NewPage is the page of the data a command opened (driver.Open).
func NewPage(d *driver.Data, o htmlreport.Options) *Page {
	if o.Title == "" {
		o.Title = d.Title
	}
	in := htmlreport.Input{Report: d.Report, Traces: d.Traces, Profiles: d.Profiles, Env: d.Env, Runs: d.Runs}
	p := &Page{Data: htmlreport.Build(in, o)}
	byPath := map[string]*trace.Trace{}
	for _, t := range d.Traces {
		byPath[t.Path] = t
	}
	for _, v := range p.Data.Views {
		p.Traces = append(p.Traces, byPath[v.Path])
	}
	return p
}

// Handler serves p.
type Handler struct {
	page     *Page
	data     []byte
	shell    []byte
	loopback bool
}

// NewHandler prepares p for serving. loopback restricts the Host header to
// loopback names.
func NewHandler(p *Page, loopback bool) (*Handler, error) {
	p.Data.Live = true
	data, err := htmlreport.MarshalData(p.Data)
	if err != nil {
		return nil, err
	}
	var shell bytes.Buffer
	if err := htmlreport.WriteShell(&shell, p.Data.Title); err != nil {
		return nil, err
	}
	return &Handler{page: p, data: data, shell: shell.Bytes(), loopback: loopback}, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	if h.loopback && !loopbackHost(r.Host) {
		http.Error(w, "forbidden host", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// Exact matches only: r.URL.Path is never used to name a file.
	switch r.URL.Path {
	case "/", "/index.html":
		h.send(w, "text/html; charset=utf-8", h.shell)
	case "/app.js":
		b, _ := htmlreport.Asset("app.js")
		h.send(w, "text/javascript; charset=utf-8", b)
	case "/app.css":
		b, _ := htmlreport.Asset("app.css")
		h.send(w, "text/css; charset=utf-8", b)
	case "/data.json":
		h.send(w, "application/json", h.data)
	case "/api/timeline":
		h.timeline(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) send(w http.ResponseWriter, ctype string, b []byte) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

// timeline answers /api/timeline?view=I&start=NS&end=NS[&pixels=N] with
// the summary of that window of trace I.
func (h *Handler) timeline(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	vi, err1 := strconv.Atoi(q.Get("view"))
	start, err2 := strconv.ParseInt(q.Get("start"), 10, 64)
	end, err3 := strconv.ParseInt(q.Get("end"), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil || end <= start {
		http.Error(w, "want view, start and end (ns) with start < end", http.StatusBadRequest)
		return
	}
	if vi < 0 || vi >= len(h.page.Traces) || h.page.Traces[vi] == nil {
		http.NotFound(w, r)
		return
	}
	// Only the trace's own span can hold events: clamping to it also keeps
	// end-start from overflowing on hostile bounds.
	if whole := h.page.Data.Views[vi].Timeline; whole != nil {
		start, end = max(start, whole.Start), min(end, whole.End)
	}
	if end <= start || end-start <= 0 {
		http.Error(w, "the window lies outside the trace", http.StatusBadRequest)
		return
	}
	px, _ := strconv.Atoi(q.Get("pixels"))
	px = min(max(px, 100), 8000)
	tl := htmlreport.BuildTimeline(h.page.Traces[vi], htmlreport.TimelineOptions{Start: start, End: end, Pixels: px, MaxBytes: 2 << 20})
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	if err := enc.Encode(tl); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h.send(w, "application/json", b.Bytes())
}

func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen binds host:port, trying the next ports (up to tries in all) while
// the port is busy. Port 0 picks a free port.
func Listen(host string, port, tries int) (net.Listener, error) {
	if tries < 1 {
		tries = 1
	}
	var err error
	for i := 0; i < tries; i++ {
		p := port + i
		if port == 0 {
			p = 0
		}
		var l net.Listener
		l, err = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || port == 0 {
			return nil, err
		}
	}
	return nil, fmt.Errorf("ports %d-%d are busy: %w", port, port+tries-1, err)
}

// IsLoopback reports whether host names only loopback addresses.
func IsLoopback(host string) bool { return loopbackHost(host) }

// URL is the address to open for a listener bound to host.
func URL(l net.Listener, host string) string {
	_, port, _ := net.SplitHostPort(l.Addr().String())
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// Limits bound what clients can hold: a slow or idle client is dropped
// after its timeout, and at most MaxConns connections are open at once,
// so no client can exhaust the process's file descriptors. At the cap a
// new connection closes the longest-idle keep-alive connection (a browser
// reopens one when it needs it) and waits only while every connection is
// busy with a request, so idle clients cannot lock new ones out for the
// idle timeout.
type Limits struct {
	ReadHeader, Read, Write, Idle time.Duration
	MaxConns                      int
}

// defaultLimits leave room for the report page (a few MB) over a slow
// link, and for a browser's half dozen parallel connections many times.
var defaultLimits = Limits{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 2 * time.Minute, Idle: 60 * time.Second, MaxConns: 64}

// Serve serves h on l until the server fails.
func Serve(l net.Listener, h http.Handler, log io.Writer) error {
	return serveWith(l, h, defaultLimits)
}

func serveWith(l net.Listener, h http.Handler, lim Limits) error {
	cl := newCapListener(l, lim.MaxConns)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: lim.ReadHeader, ReadTimeout: lim.Read, WriteTimeout: lim.Write, IdleTimeout: lim.Idle,
		ConnState: cl.state}
	return srv.Serve(cl)
}

// capListener holds at most max connections open. When a new one arrives
// at the cap, the connection idle the longest (between keep-alive
// requests) is closed to make room; with none idle, the new connection
// waits until one closes.
type capListener struct {
	net.Listener
	max  int
	mu   sync.Mutex
	free *sync.Cond
	open int
	idle map[net.Conn]time.Time // since when each idle connection is idle
}

func newCapListener(l net.Listener, max int) *capListener {
	c := &capListener{Listener: l, max: max, idle: map[net.Conn]time.Time{}}
	c.free = sync.NewCond(&c.mu)
	return c
}

func (c *capListener) Accept() (net.Conn, error) {
	conn, err := c.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.open >= c.max {
		if oldest := c.longestIdle(); oldest != nil {
			delete(c.idle, oldest)
			c.mu.Unlock()
			oldest.Close() // counted down by capConn.Close
			c.mu.Lock()
			continue
		}
		c.free.Wait() // every connection is busy: wait for one to end
	}
	c.open++
	return &capConn{Conn: conn, l: c}, nil
}

func (c *capListener) longestIdle() net.Conn {
	var oldest net.Conn
	var since time.Time
	for conn, t := range c.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = conn, t
		}
	}
	return oldest
}

// state follows the server's connections (http.Server.ConnState).
func (c *capListener) state(conn net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == http.StateIdle {
		c.idle[conn] = time.Now()
		c.free.Broadcast() // an Accept at the cap can evict it
		return
	}
	delete(c.idle, conn)
}

// capConn gives its place back once, when closed.
type capConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		delete(c.l.idle, c)
		c.l.free.Broadcast()
		c.l.mu.Unlock()
	})
	return err
}
