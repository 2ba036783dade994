package server

import "runtime/debug"

// version is set by release builds:
//
//	go build -ldflags "-X github.com/zaris-io/zaris/server.version=v1.2.3" ./cmd/zaris-server
var version string

// Version is the version of this build: the link-time version of a release
// build, else the module version recorded by the Go toolchain, else "devel"
// for a build from a working tree.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
