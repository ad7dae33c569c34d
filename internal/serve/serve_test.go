package serve

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/htmlreport"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

func testPage(t *testing.T) *Page {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	p, err := Load(ios, []string{"../htmlreport/testdata/xss.json"}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
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
