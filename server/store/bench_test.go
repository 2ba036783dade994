package store

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/zaris-io/zaris/internal/kv"
)

const benchKeys = 1 << 16

// emptyBenchStore is a store with the default configuration, closed when
// the benchmark ends.
func emptyBenchStore(b *testing.B) *Store {
	s, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// execEach runs op on key with args[i] as the i-th call's arguments
// (cycling), allocations reported: redis-benchmark's row through Exec.
func execEach(b *testing.B, s *Store, op kv.CmdOp, key string, args [][][]byte) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if r := s.Exec(kv.Cmd{Op: op, Key: key, Args: args[i%len(args)]}); r.Status != kv.StatusSuccess {
			b.Fatal(r.Message)
		}
	}
}

func benchStore(b *testing.B) (*Store, []string) {
	s := emptyBenchStore(b)
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("key:%012d", i) // 16 bytes
		s.Put(keys[i], make([]byte, 32), nil)
	}
	return s, keys
}

func BenchmarkGet(b *testing.B) {
	s, keys := benchStore(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Get(keys[i&(benchKeys-1)])
	}
}

func BenchmarkGetParallel(b *testing.B) {
	s, keys := benchStore(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s.Get(keys[i&(benchKeys-1)])
			i += 7
		}
	})
}

func BenchmarkPut(b *testing.B) {
	s, keys := benchStore(b)
	value := make([]byte, 32)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Put(keys[i&(benchKeys-1)], value, nil)
	}
}

func BenchmarkPutParallel(b *testing.B) {
	s, keys := benchStore(b)
	value := make([]byte, 32)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s.Put(keys[i&(benchKeys-1)], value, nil)
			i += 7
		}
	})
}

// BenchmarkMemoryPerKey stores 1 M keys of 16 bytes with 32-byte values and
// reports the heap growth per key (compare with redis-server's INFO memory in
// docs/BENCHMARKS.md).
func BenchmarkMemoryPerKey(b *testing.B) {
	// "ttl": the same keys, each with a TTL (SET … EX): the expiry is 8
	// bytes after the value and a bit of the index's hash (D89).
	for _, load := range []struct {
		name string
		opts *kv.PutOptions
	}{{"plain", nil}, {"ttl", &kv.PutOptions{TTL: time.Hour}}} {
		b.Run(load.name, func(b *testing.B) { benchMemoryPerKey(b, load.opts) })
	}
}

func benchMemoryPerKey(b *testing.B, opts *kv.PutOptions) {
	const n = 1_000_000
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cfg := DefaultConfig()
		s, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		buf := []byte("key:000000000000")
		for i := range n {
			k := strconv.AppendInt(buf[:4], int64(i), 10)
			for len(k) < 16 {
				k = append(k, '_')
			}
			s.Put(string(k), make([]byte, 32), opts)
		}
		s.SweepOnce()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/key")
		b.ReportMetric(float64(s.Stats().OwnedBytes)/n, "accounted-bytes/key")
		runtime.KeepAlive(s)
		s.Close()
	}
}

// BenchmarkExecLPush is LPUSH of one 32-byte element through Exec, the
// store's share of redis-benchmark's LPUSH row (issue #17), over 64 lists
// that grow with b.N.
func BenchmarkExecLPush(b *testing.B) {
	s := emptyBenchStore(b)
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("list:%011d", i) // 16 bytes
	}
	elem := [][]byte{make([]byte, 32)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if r := s.Exec(kv.Cmd{Op: kv.CmdLPush, Key: keys[i%len(keys)], Args: elem}); r.Status != kv.StatusSuccess {
			b.Fatal(r.Message)
		}
	}
}

// BenchmarkExecHSet is HSET of one field (of 1024 per hash) with a 32-byte
// value through Exec, over 64 hashes.
func BenchmarkExecHSet(b *testing.B) {
	s := emptyBenchStore(b)
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("hash:%011d", i)
	}
	fields := make([][]byte, 1024)
	for i := range fields {
		fields[i] = []byte("field:" + strconv.Itoa(i))
	}
	value := make([]byte, 32)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		cmd := kv.Cmd{Op: kv.CmdHSet, Key: keys[i%len(keys)], Args: [][]byte{fields[(i/len(keys))%len(fields)], value}}
		if r := s.Exec(cmd); r.Status != kv.StatusSuccess {
			b.Fatal(r.Message)
		}
	}
}

// BenchmarkExecRead is a collection read (HGET) through Exec: the read path
// that stamps the key's access (CLIENT NO-TOUCH skips the stamp).
func BenchmarkExecRead(b *testing.B) {
	s := emptyBenchStore(b)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "hash:" + strconv.Itoa(i)
		s.Exec(kv.NewCmd(kv.CmdHSet, keys[i], "f", "v"))
	}
	field := [][]byte{[]byte("f")}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Exec(kv.Cmd{Op: kv.CmdHGet, Key: keys[i&1023], Args: field})
	}
}

// BenchmarkExecZAdd is redis-benchmark's ZADD row through Exec: one sorted
// set, a random score and member out of 100 000 each, so that once the set
// is full most calls move a member (a remove and an insert in the skiplist).
func BenchmarkExecZAdd(b *testing.B) {
	s := emptyBenchStore(b)
	const keyspace = 100_000
	args := make([][][]byte, 1<<20) // enough that the touched nodes are not all in cache
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range args {
		args[i] = [][]byte{[]byte(strconv.Itoa(rng.IntN(keyspace))), fmt.Appendf(nil, "element:%012d", rng.IntN(keyspace))}
	}
	for i := range keyspace { // the set full, as after the benchmark's first seconds
		s.Exec(kv.Cmd{Op: kv.CmdZAdd, Key: "myzset", Args: [][]byte{[]byte(strconv.Itoa(rng.IntN(keyspace))), fmt.Appendf(nil, "element:%012d", i)}})
	}
	execEach(b, s, kv.CmdZAdd, "myzset", args)
}

// BenchmarkGetColdKeys reads 1 M keys in a random order: every read misses
// the CPU caches on the index and the record, as a large keyspace's reads
// do (BenchmarkGet's 64 Ki keys fit the caches).
func BenchmarkGetColdKeys(b *testing.B) {
	s := emptyBenchStore(b)
	const n = 1 << 20
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("key:%012d", i)
		s.Put(keys[i], make([]byte, 32), nil)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.Get(keys[i&(n-1)])
	}
}

// BenchmarkExecSAdd is redis-benchmark's SADD row through Exec: one set, a
// member out of 100 000, so that once the set is full most calls add
// nothing.
func BenchmarkExecSAdd(b *testing.B) {
	s := emptyBenchStore(b)
	const keyspace = 100_000
	args := make([][][]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range args {
		args[i] = [][]byte{fmt.Appendf(nil, "element:%012d", rng.IntN(keyspace))}
	}
	for i := range keyspace { // the set full, as after the benchmark's first seconds
		s.Exec(kv.Cmd{Op: kv.CmdSAdd, Key: "myset", Args: [][]byte{fmt.Appendf(nil, "element:%012d", i)}})
	}
	execEach(b, s, kv.CmdSAdd, "myset", args)
}

// BenchmarkPipelinedGets runs GETs sixteen at a time over a million random
// keys, as a pipelined batch reaches the store: "cold" looks each key up in
// turn, "warmed" reads the batch ahead first (WarmAhead, D80). ns/op is per
// GET.
func BenchmarkPipelinedGets(b *testing.B) {
	s := emptyBenchStore(b)
	const n = 1 << 20
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%012d", i)
		s.Put(string(keys[i]), make([]byte, 32), nil)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([][]byte, WarmBatch)
	for _, warm := range []bool{false, true} {
		b.Run(map[bool]string{false: "cold", true: "warmed"}[warm], func(b *testing.B) {
			var sum uint
			for i := 0; b.Loop(); i++ {
				if i%WarmBatch == 0 {
					for j := range batch {
						batch[j] = keys[rng.IntN(n)]
					}
					if warm {
						sum += s.WarmAhead(batch)
					}
				}
				if r := s.Get(unsafeView(batch[i%WarmBatch])); r.Status != kv.StatusSuccess {
					b.Fatal(r.Status)
				}
			}
			_ = sum
		})
	}
}

// BenchmarkPipelinedHSetReadAhead is a pipeline's HSETs on one hash of
// 100 000 fields, as the RESP front end runs them: the read-ahead of the
// batch's 16 fields (WarmAheadFields), then the writes one by one. Per
// HSET; what it measures is how much of the fields' cache misses the
// read-ahead overlaps.
func BenchmarkPipelinedHSetReadAhead(b *testing.B) {
	s := bigItemBenchStore(b)
	const nFields = 100000
	fields := make([][]byte, nFields)
	value := make([]byte, 32)
	for i := range fields {
		fields[i] = fmt.Appendf(nil, "element:%012d", i)
		s.Exec(kv.Cmd{Op: kv.CmdHSet, Key: "myhash", Args: [][]byte{fields[i], value}})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	readAheadPipelines(b, s, kv.CmdHSet, "myhash", func(args *[2][]byte) {
		args[0], args[1] = fields[rng.IntN(nFields)], value
	})
}

// bigItemBenchStore is a bench store whose items may reach 64 MiB: the
// read-ahead benchmarks' collections are redis-benchmark's (~7 MB).
func bigItemBenchStore(b *testing.B) *Store {
	cfg := DefaultConfig()
	cfg.MaxItemBytes = 64 << 20
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// readAheadPipelines runs b.N commands op on key as the RESP front end
// runs a pipeline: batches of WarmBatch, each one's arguments drawn by
// draw, read ahead (WarmAheadFields: the first and the last argument),
// then executed one by one.
func readAheadPipelines(b *testing.B, s *Store, op kv.CmdOp, key string, draw func(args *[2][]byte)) {
	var keys, firsts, lasts [WarmBatch][]byte
	var argv [WarmBatch][2][]byte
	for i := range keys {
		keys[i] = []byte(key)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += WarmBatch {
		for j := range argv {
			draw(&argv[j])
			firsts[j], lasts[j] = argv[j][0], argv[j][1]
		}
		s.WarmAheadFields(keys[:], firsts[:], lasts[:])
		for j := range argv {
			if r := s.Exec(kv.Cmd{Op: op, Key: key, Args: argv[j][:]}); r.Status != kv.StatusSuccess {
				b.Fatal(r.Message)
			}
		}
	}
}

// BenchmarkPipelinedZAddReadAhead is BenchmarkPipelinedHSetReadAhead for
// redis-benchmark's ZADD: new scores for members of a 100 000-member
// sorted set, read ahead (the member is the command's last argument) then
// written. Per ZADD.
func BenchmarkPipelinedZAddReadAhead(b *testing.B) {
	s := bigItemBenchStore(b)
	const nMembers = 100000
	members := make([][]byte, nMembers)
	for i := range members {
		members[i] = fmt.Appendf(nil, "element:%012d", i)
		s.Exec(kv.Cmd{Op: kv.CmdZAdd, Key: "myzset", Args: [][]byte{[]byte(strconv.Itoa(i)), members[i]}})
	}
	scores := make([][]byte, 1024)
	for i := range scores {
		scores[i] = []byte(strconv.Itoa(i * 97 % nMembers))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	readAheadPipelines(b, s, kv.CmdZAdd, "myzset", func(args *[2][]byte) {
		args[0], args[1] = scores[rng.IntN(len(scores))], members[rng.IntN(nMembers)]
	})
}

// BenchmarkPipelinedIncrReadAhead is a pipeline's INCRs on keys drawn
// from 100 000 (redis-benchmark's -r 100000): the batch's 16 keys read
// ahead (WarmAhead), then the INCRs. Per INCR.
func BenchmarkPipelinedIncrReadAhead(b *testing.B) {
	s := emptyBenchStore(b)
	const nKeys = 100000
	keys := make([][]byte, nKeys)
	one := []byte("1")
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "counter:%012d", i)
		s.Exec(kv.Cmd{Op: kv.CmdIncrBy, Key: string(keys[i]), Args: [][]byte{one}})
	}
	var batch [WarmBatch][]byte
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += WarmBatch {
		for j := range batch {
			batch[j] = keys[rng.IntN(nKeys)]
		}
		s.WarmAhead(batch[:])
		for j := range batch {
			if r := s.Exec(kv.Cmd{Op: kv.CmdIncrBy, Key: unsafe.String(unsafe.SliceData(batch[j]), len(batch[j])), Args: [][]byte{one}}); r.Status != kv.StatusSuccess {
				b.Fatal(r.Message)
			}
		}
	}
}
