// Package readmetest keeps README.md and docs/GETTING-STARTED.md true: its
// tests (issue #18 item 1) check every snippet of those two pages against
// the code, so the documentation fails the build the day it stops saying
// what the code does.
//
//   - A ```go block must be the body of an Example function, named by the
//     marker line just above it: <!-- example: DIR NAME --> (DIR relative to
//     the repository root). The test compares the block with that body, and
//     the Example must carry an "// Output:" comment, so `go test ./DIR`
//     compiles it, runs it and checks what it prints.
//   - A ```console block is a transcript, marked <!-- run: ENV --> with ENV
//     "node" (one zaris-server, as `make run` starts it), "cluster" (three,
//     RF 2 sync, as `make cluster` starts them) or "echo-app" (such a
//     cluster and two copies of examples/echo-app on it, on the documented
//     ports 8080 and 8081, with one SESSION_KEY); "retry" after
//     ENV runs each command of the block again until its output matches or a
//     deadline passes (for a failover). Lines starting with "$ " are run by
//     bash in order, in one environment per page; the lines after one are the
//     output expected from it (stdout and stderr). In expected output "..."
//     matches any text within a line, and a line of just "..." any number
//     of lines. The servers listen on ports from the kernel: the documented
//     ports (7861…, 6380…, 7801…) are rewritten in the commands and back in
//     the output, bin/zarisctl is the real zarisctl pointed at the page's
//     cluster, bin/cluster/nI.pid hold the nodes' pids, and redis-cli runs
//     with --no-raw (it formats replies as on a terminal, as the pages show).
//   - The README's TLS block (marked <!-- checked by TestTLSExampleAsWritten -->)
//     is run by its own test: zarisctl cert, the server with the README's
//     flags, then the block's redis-cli and curl lines and the SDK with the
//     README's zariss:// connection string.
//   - Other ```sh blocks (make targets on the documented fixed ports,
//     long-running commands) are not run by the tests.
//
// Only its tests hold code; the package exports nothing.
package readmetest
