// Package version holds the tool's version, stamped into every report and
// run manifest.
package version

// Version is overridden at build time with -ldflags "-X ...version.Version=...".
var Version = "0.1.0-dev"
