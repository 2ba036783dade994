// Package libs holds acceptance tests (issue #13 item 6): stock Redis
// client libraries — go-redis's rate limiter, the Redlock library
// redsync, the asynq job queue, go-redis pipelines and transactions —
// run unchanged against a real Zaris node and a real three-node cluster
// over the RESP port. The tests are the package's _test.go files.
package libs
