// Package pydist builds the bottleneck-profiler wheels: the Python package
// python/bottleneck_profiler, the agent files it loads in-process, and the
// bottleneck binary cross-compiled for the wheel's platform (static, no
// cgo), written as a wheel (a zip with dist-info, PEP 427) directly. The
// output is byte-for-byte reproducible: trimmed paths, no VCS stamp, fixed
// file order, times and modes.
package pydist

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/agent"
)

// Distribution and import names. The import name is never "bottleneck":
// that is the NumPy accelerator on PyPI, which pandas imports when present.
const (
	Distribution = "bottleneck-profiler"
	ImportName   = "bottleneck_profiler"
)

// Platform is one wheel target.
type Platform struct {
	GOOS, GOARCH string
	// Tag is the wheel platform tag. The binary is static, so the Linux
	// wheels fit glibc and musl systems alike.
	Tag string
}

// Platforms are the wheels a release builds. Go 1.26 needs macOS 12.
// On Windows `run` says it is not available (it needs POSIX process
// control, internal/runner); analyze, report, serve, export, diff and check work.
var Platforms = []Platform{
	{"linux", "amd64", "manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64"},
	{"linux", "arm64", "manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64"},
	{"darwin", "arm64", "macosx_12_0_arm64"},
	{"darwin", "amd64", "macosx_12_0_x86_64"},
	{"windows", "amd64", "win_amd64"},
}

// exe is the binary's file name on p.
func (p Platform) exe() string {
	if p.GOOS == "windows" {
		return "bottleneck.exe"
	}
	return "bottleneck"
}

// HostPlatform returns the platform of this machine, if a wheel is built for it.
func HostPlatform() (Platform, bool) {
	return FindPlatform(runtime.GOOS + "/" + runtime.GOARCH)
}

// FindPlatform looks a platform up by "GOOS/GOARCH".
func FindPlatform(name string) (Platform, bool) {
	for _, p := range Platforms {
		if p.GOOS+"/"+p.GOARCH == name {
			return p, true
		}
	}
	return Platform{}, false
}

var (
	releaseRe = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*$`)
	goVerRe   = regexp.MustCompile(`(?m)^var Version = "([^"]*)"`)
)

// PythonVersion turns the tool's version (internal/version) into a PEP 440
// version: "1.2.3" stays, "1.2.3-dev" becomes "1.2.3.dev0".
func PythonVersion(v string) (string, error) {
	rel, dev := strings.CutSuffix(v, "-dev")
	if !releaseRe.MatchString(rel) {
		return "", fmt.Errorf("version %q: want N.N.N or N.N.N-dev", v)
	}
	if dev {
		return rel + ".dev0", nil
	}
	return rel, nil
}

// SourceVersion reads the version from internal/version/version.go in the
// repository at root, the one place it is set.
func SourceVersion(root string) (string, error) {
	f := filepath.Join(root, "internal", "version", "version.go")
	b, err := os.ReadFile(f)
	if err != nil {
		return "", err
	}
	m := goVerRe.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s: no `var Version = \"...\"` line", f)
	}
	return string(m[1]), nil
}

// Options of one wheel build.
type Options struct {
	Root     string // repository root
	OutDir   string // where the wheel is written
	Platform Platform
	// Time stamps every zip entry (zip cannot go before 1980); the build
	// takes SOURCE_DATE_EPOCH when set, else 1980-01-01.
	Time time.Time
}

type entry struct {
	name string
	data []byte
	mode fs.FileMode
}

// Build writes the wheel for o.Platform into o.OutDir and returns its path.
func Build(o Options) (string, error) {
	goVer, err := SourceVersion(o.Root)
	if err != nil {
		return "", err
	}
	pyVer, err := PythonVersion(goVer)
	if err != nil {
		return "", err
	}
	bin, err := buildBinary(o.Root, o.Platform)
	if err != nil {
		return "", err
	}
	var files []entry
	pkgDir := filepath.Join(o.Root, "python", ImportName)
	pyFiles, err := filepath.Glob(filepath.Join(pkgDir, "*.py"))
	if err != nil || len(pyFiles) == 0 {
		return "", fmt.Errorf("%s: no Python sources", pkgDir)
	}
	for _, f := range pyFiles {
		if filepath.Base(f) == "_version.py" {
			continue // written below from the one version
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		files = append(files, entry{ImportName + "/" + filepath.Base(f), b, 0o644})
	}
	files = append(files, entry{ImportName + "/_version.py",
		[]byte(fmt.Sprintf("# written by the wheel build from internal/version\nversion = %q\n", pyVer)), 0o644})
	// the agent's modules as `bottleneck run` writes them, less its
	// launchers, plus the in-process entry points
	for _, n := range append(slices.DeleteFunc(slices.Clone(agent.Names), func(n string) bool {
		return n == agent.Boot || n == agent.Shim
	}), agent.InProcess) {
		b, err := os.ReadFile(filepath.Join(o.Root, "internal", "agent", "py", n))
		if err != nil {
			return "", err
		}
		files = append(files, entry{ImportName + "/_agent/" + n, b, 0o644})
	}
	files = append(files, entry{ImportName + "/bin/" + o.Platform.exe(), bin, 0o755})

	tag := "py3-none-" + o.Platform.Tag
	distInfo := fmt.Sprintf("%s-%s.dist-info", ImportName, pyVer)
	readme, _ := os.ReadFile(filepath.Join(pkgDir, "README.md"))
	files = append(files,
		entry{distInfo + "/METADATA", metadata(pyVer, readme), 0o644},
		entry{distInfo + "/WHEEL", []byte("Wheel-Version: 1.0\nGenerator: bottleneck internal/pydist\nRoot-Is-Purelib: false\nTag: " + tag + "\n"), 0o644},
		entry{distInfo + "/entry_points.txt", []byte("[console_scripts]\nbottleneck = " + ImportName + "._binary:main\n"), 0o644},
	)
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var record bytes.Buffer
	for _, f := range files {
		sum := sha256.Sum256(f.data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.data))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", distInfo)
	files = append(files, entry{distInfo + "/RECORD", record.Bytes(), 0o644})

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: o.Time}
		h.SetMode(f.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return "", err
		}
		if _, err := w.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(o.OutDir, fmt.Sprintf("%s-%s-%s.whl", ImportName, pyVer, tag))
	return out, os.WriteFile(out, buf.Bytes(), 0o644)
}

func metadata(version string, readme []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Metadata-Version: 2.1\nName: %s\nVersion: %s\n", Distribution, version)
	b.WriteString("Summary: Why is my PyTorch program slow, and what do I change? (the bottleneck command and a Python API)\n")
	b.WriteString("Requires-Python: >=3.9\n")
	if len(readme) > 0 {
		b.WriteString("Description-Content-Type: text/markdown\n\n")
		b.Write(readme)
	}
	return b.Bytes()
}

// buildBinary cross-compiles cmd/bottleneck for p, reproducibly.
func buildBinary(root string, p Platform) ([]byte, error) {
	dir, err := os.MkdirTemp("", "bottleneck-wheel-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, p.exe())
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", out, "./cmd/bottleneck")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.GOOS, "GOARCH="+p.GOARCH)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build for %s/%s: %v\n%s", p.GOOS, p.GOARCH, err, msg)
	}
	return os.ReadFile(out)
}
