package serve

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/htmlreport"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

func testPage(t *testing.T) *Page {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	p, err := load(ios, []string{"../htmlreport/testdata/xss.json"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// load opens paths as the serve command does, with top rows per table.
func load(ios *iostreams.IOStreams, paths []string, top int) (*Page, error) {
	o := driver.DefaultOptions()
	o.Table.Top = top
	d, err := driver.Open(ios, paths, o)
	if err != nil {
		return nil, err
	}
	return NewPage(d, htmlreport.Options{}), nil
}

func get(t *testing.T, h http.Handler, target, host string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", "http://127.0.0.1:8080/", nil)
	req.URL.Path, req.URL.RawPath, req.URL.RawQuery = target, "", ""
	if i := strings.IndexByte(target, '?'); i >= 0 {
		req.URL.Path, req.URL.RawQuery = target[:i], target[i+1:]
	}
	req.RequestURI = target
	if host != "" {
		req.Host = host
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestRoutes(t *testing.T) {
	h, err := NewHandler(testPage(t), true)
	if err != nil {
		t.Fatal(err)
	}
	for path, ctype := range map[string]string{"/": "text/html", "/app.js": "text/javascript", "/app.css": "text/css", "/data.json": "application/json"} {
		w := get(t, h, path, "")
		if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), ctype) || w.Body.Len() == 0 {
			t.Errorf("%s: %d %s (%d bytes)", path, w.Code, w.Header().Get("Content-Type"), w.Body.Len())
		}
	}
	w := get(t, h, "/data.json", "")
	var d htmlreport.Data
	if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil || !d.Live || len(d.Views) != 1 {
		t.Fatalf("data.json: %v, live %v, %d views", err, d.Live, len(d.Views))
	}
	if strings.Contains(w.Body.String(), "<img") {
		t.Error("data.json holds an unescaped name")
	}
	shell := get(t, h, "/", "").Body.String()
	if !strings.Contains(shell, `src="app.js"`) || strings.Contains(shell, "bottleneck-data") {
		t.Errorf("shell page: %s", shell)
	}
}

func TestNothingOutsideTheReport(t *testing.T) {
	h, err := NewHandler(testPage(t), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/../go.mod", "/../../../../etc/passwd", "/app.js/../../go.mod", "/%2e%2e/%2e%2e/go.mod",
		"/..%2f..%2fgo.mod", "/testdata/xss.json", "/serve.go", "//etc/passwd", "/data.json/../../serve.go", "/assets/app.js"} {
		w := get(t, h, p, "")
		if w.Code != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", p, w.Code)
		}
		if strings.Contains(w.Body.String(), "module github.com") || strings.Contains(w.Body.String(), "root:") {
			t.Errorf("%s: served a file", p)
		}
	}
	// Through a real server too, with the client not cleaning the path.
	srv := httptest.NewServer(h)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /../../go.mod HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(conn)
	if strings.Contains(string(b), "module github.com") || strings.Contains(string(b), "200 OK") {
		t.Errorf("raw ../ request answered: %.200s", b)
	}
	// Only GET/HEAD.
	req := httptest.NewRequest("POST", "http://127.0.0.1/data.json", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", w.Code)
	}
}

func TestHostHeader(t *testing.T) {
	h, _ := NewHandler(testPage(t), true)
	for host, want := range map[string]int{"127.0.0.1:8080": 200, "localhost:9": 200, "[::1]:8080": 200, "evil.example:8080": 403, "10.0.0.1": 403} {
		if w := get(t, h, "/data.json", host); w.Code != want {
			t.Errorf("Host %s: %d, want %d", host, w.Code, want)
		}
	}
	open, _ := NewHandler(testPage(t), false)
	if w := get(t, open, "/data.json", "box.lan:8080"); w.Code != 200 {
		t.Errorf("non-loopback bind refused Host: %d", w.Code)
	}
}

func TestTimelineAPI(t *testing.T) {
	p := testPage(t)
	h, _ := NewHandler(p, true)
	whole := p.Data.Views[0].Timeline
	mid := (whole.Start + whole.End) / 2
	w := get(t, h, "/api/timeline?view=0&start="+strconv.FormatInt(whole.Start, 10)+"&end="+strconv.FormatInt(mid, 10)+"&pixels=500", "")
	var tl htmlreport.Timeline
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &tl) != nil {
		t.Fatalf("%d %s", w.Code, w.Body.String())
	}
	if tl.Start != whole.Start || tl.End != mid || tl.Events == 0 || tl.Events >= whole.Events {
		t.Errorf("window [%d,%d] with %d events (whole %d)", tl.Start, tl.End, tl.Events, whole.Events)
	}
	for _, q := range []string{"view=1&start=0&end=10", "view=-1&start=0&end=10", "view=0&start=10&end=5", "view=x&start=0&end=1", "view=0"} {
		if w := get(t, h, "/api/timeline?"+q, ""); w.Code == 200 {
			t.Errorf("%s: 200", q)
		}
	}
}

func TestListenTriesNextPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	l, err := Listen("127.0.0.1", port, 20)
	if err != nil {
		t.Skipf("no free port after %d: %v", port, err)
	}
	defer l.Close()
	got := l.Addr().(*net.TCPAddr).Port
	if got <= port || got > port+19 {
		t.Errorf("bound %d, busy %d", got, port)
	}
	if u := URL(l, "127.0.0.1"); u != "http://127.0.0.1:"+strconv.Itoa(got)+"/" {
		t.Errorf("URL %s", u)
	}
	if _, err := Listen("127.0.0.1", port, 1); err == nil {
		t.Error("busy port with one try: no error")
	}
}

// TestRunDirectoryPage: serve RUN_DIR shows the run's diagnosis (its
// evidence and Python profile) and its Python profiles and environment.
func TestRunDirectoryPage(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	p, err := load(ios, []string{testutil.RunDir(t, "slow_dataset")}, driver.DefaultTop)
	if err != nil {
		t.Fatal(err)
	}
	b, err := htmlreport.MarshalData(p.Data)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"sources":["trace","run evidence","python profile"]`, `"python":[{"tag":"rank0"`, `"format":"bottleneck.env-summary"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("page data lacks %s", want)
		}
	}
	if len(p.Traces) == 0 || p.Traces[0] == nil {
		t.Error("the page's view has no trace behind it (timeline zoom)")
	}
}

// Bounds near int64's limits are clamped to the trace, never overflowing
// the window's width.
func TestTimelineAPIExtremeBounds(t *testing.T) {
	p := testPage(t)
	h, _ := NewHandler(p, true)
	whole := p.Data.Views[0].Timeline
	w := get(t, h, "/api/timeline?view=0&start=-9223372036854775807&end=9223372036854775807&pixels=1", "")
	var tl htmlreport.Timeline
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &tl) != nil {
		t.Fatalf("%d %s", w.Code, w.Body.String())
	}
	if tl.Start != whole.Start || tl.End != whole.End || tl.Pixel <= 0 {
		t.Errorf("window [%d,%d] pixel %d ns, want the whole trace [%d,%d]", tl.Start, tl.End, tl.Pixel, whole.Start, whole.End)
	}
	if w := get(t, h, "/api/timeline?view=0&start="+strconv.FormatInt(whole.End+1, 10)+"&end=9223372036854775807", ""); w.Code != http.StatusBadRequest {
		t.Errorf("a window after the trace: %d", w.Code)
	}
}

// Idle keep-alive connections are closed after the idle timeout, and
// connections over the cap wait instead of exhausting descriptors: with
// the cap held by idle clients, a new request is served once they time
// out.
// A full house of idle keep-alive clients (the real limits: 64
// connections, 60 s idle timeout) does not lock a new client out: the
// new request is served and the longest-idle connection is closed to make
// room. The waits are bounds on a hang, far above any real latency.
func TestIdleClientsDoNotLockOutNewOnes(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	lim := defaultLimits
	go serveWith(l, ok, lim)

	// MaxConns keep-alive clients hold the cap: one request each, then idle.
	var idle []net.Conn
	for range lim.MaxConns {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		idle = append(idle, c)
	}
	// New clients, one after another, are each served.
	for i := range 3 {
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get("http://" + l.Addr().String() + "/")
		if err != nil {
			t.Fatalf("new client %d locked out by %d idle ones: %v", i, len(idle), err)
		}
		resp.Body.Close()
	}
	// The server made room by closing idle clients: which ones depends on
	// when each was marked idle, which a busy machine delays (the first
	// client was still open once on CI), so any of them, each read at once.
	closed := make(chan bool, len(idle))
	for _, c := range idle {
		go func() {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := c.Read(make([]byte, 1))
			closed <- err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
		}()
	}
	n := 0
	for range idle {
		if <-closed {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no idle connection was closed to make room for the %d new clients", 3)
	}
}

// Below the cap an idle keep-alive connection is left open: a new client
// is served beside it and it serves its next request.
func TestIdleConnectionKeptBelowTheCap(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	lim := defaultLimits
	lim.MaxConns = 2
	go serveWith(l, ok, lim)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	get := func() error {
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + l.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := get(); err != nil {
		t.Errorf("the idle connection was closed below the cap: %v", err)
	}
}
