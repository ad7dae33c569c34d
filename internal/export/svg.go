package export

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/bottleneck-dev/bottleneck/internal/flame"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// svg: a static, self-contained flame graph (icicle: the root on top),
// no script and no external references; every frame has a <title>
// tooltip. Names come from untrusted traces and are XML-escaped. The
// tree is cut to MaxNodes (default flame.DefaultMaxNodes) and frames
// narrower than a third of a pixel are left out.

const (
	svgWidth  = 1200.0
	svgRowH   = 17.0
	svgTop    = 40.0
	svgCharW  = 6.6
	svgMinPix = 0.33
)

func writeSVG(w io.Writer, in *Input, o *Options) error {
	t, src, err := tree(in, o)
	if err != nil {
		return err
	}
	maxNodes := o.MaxNodes
	if maxNodes <= 0 {
		maxNodes = flame.DefaultMaxNodes
	}
	if n := t.Limit(maxNodes); n > 0 {
		o.note("svg: merged %d small frames into %q to stay under %d nodes", n, flame.Other, maxNodes)
	}
	title := map[string]string{StacksOps: "Op call stacks: host self time", StacksDevice: "Op call stacks: device time launched", StacksPython: "Python stacks (sampled)"}[src]
	return WriteFlameSVG(w, t, title)
}

// WriteFlameSVG draws t as an SVG icicle graph.
func WriteFlameSVG(w io.Writer, t *flame.Tree, title string) error {
	bw := bufio.NewWriter(w)
	depth := t.Depth()
	height := svgTop + float64(depth)*svgRowH + 10
	total := t.Total()
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Verdana, sans-serif" font-size="11">
<rect x="0" y="0" width="100%%" height="100%%" fill="#f8f8f8"/>
<text x="%.0f" y="20" font-size="15" text-anchor="middle">%s</text>
<text x="10" y="34" font-size="11" fill="#555">total %s · %d frames · hover a frame for its value</text>
`, svgWidth+20, height, svgWidth+20, height, (svgWidth+20)/2, xmlText(title), xmlText(formatValue(t, total)), t.Nodes())
	if total <= 0 {
		fmt.Fprintf(bw, "<text x=\"10\" y=\"60\">no samples</text>\n</svg>\n")
		return bw.Flush()
	}
	scale := svgWidth / float64(total)
	var draw func(n *flame.Node, d int, x int64)
	draw = func(n *flame.Node, d int, x int64) {
		wpx := float64(n.Total) * scale
		if wpx < svgMinPix {
			return
		}
		px := 10 + float64(x)*scale
		py := svgTop + float64(d)*svgRowH
		name := n.Name
		tip := fmt.Sprintf("%s (%s, %.2f%%)", name, formatValue(t, n.Total), 100*float64(n.Total)/float64(total))
		fmt.Fprintf(bw, "<g><title>%s</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" rx=\"2\"/>",
			xmlText(tip), px, py, wpx, svgRowH-1, frameColor(name, d == 0))
		if chars := int((wpx - 6) / svgCharW); chars >= 3 {
			label := name
			if utf8.RuneCountInString(label) > chars {
				r := []rune(label)
				label = string(r[:chars-2]) + ".."
			}
			fmt.Fprintf(bw, "<text x=\"%.2f\" y=\"%.1f\">%s</text>", px+3, py+svgRowH-5, xmlText(label))
		}
		bw.WriteString("</g>\n")
		cx := x
		for _, c := range n.Children {
			draw(c, d+1, cx)
			cx += c.Total
		}
	}
	draw(t.Root, 0, 0)
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

func formatValue(t *flame.Tree, v int64) string {
	d := units.Duration(float64(v*t.PeriodNs) / 1e3)
	if t.Unit == flame.UnitSamples {
		return fmt.Sprintf("%d samples, %s", v, d)
	}
	return d
}

// xmlText escapes s for XML text and attributes, replacing invalid UTF-8
// and the control characters XML 1.0 forbids.
func xmlText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t' && r != '\n') || r == 0xFFFE || r == 0xFFFF {
			return ' '
		}
		return r
	}, s)
	return html.EscapeString(s)
}

// frameColor is a warm colour derived from the name, so a frame keeps its
// colour across graphs.
func frameColor(name string, root bool) string {
	if root {
		return "#c8c8c8"
	}
	if name == flame.Other {
		return "#b0b0b0"
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	r := 205 + v%50
	g := 80 + (v>>8)%130
	b := 40 + (v>>16)%50
	return fmt.Sprintf("rgb(%d,%d,%d)", r, g, b)
}
