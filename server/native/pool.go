package native

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultWorkers returns the default pool bounds: CPU×16 clamped to 64..1024
// for the maximum (R-OPS-3); the minimum stays warm.
func DefaultWorkers() (minWorkers, maxWorkers int) {
	maxWorkers = min(max(runtime.NumCPU()*16, 64), 1024)
	return min(16, maxWorkers), maxWorkers
}

// workerIdle is how long a worker above the minimum waits for work before it
// exits.
const workerIdle = 5 * time.Second

// pool is a bounded set of goroutines for work that may block. Submit never
// spawns past max: when every worker is busy it waits, which pushes back on
// the one connection that submitted.
type pool struct {
	tasks    chan func()
	min, max int32
	running  atomic.Int32
	wg       sync.WaitGroup
	stop     chan struct{}
	stopOnce sync.Once
}

func newPool(minWorkers, maxWorkers int) *pool {
	p := &pool{tasks: make(chan func()), min: int32(minWorkers), max: int32(maxWorkers), stop: make(chan struct{})}
	for range minWorkers {
		p.running.Add(1)
		p.wg.Add(1)
		go p.work(nil)
	}
	return p
}

func (p *pool) work(task func()) {
	defer p.wg.Done()
	defer p.running.Add(-1)
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		if task != nil {
			task()
			task = nil
		}
		idle.Reset(workerIdle)
		select {
		case task = <-p.tasks:
		case <-idle.C:
			if p.running.Load() > p.min {
				return
			}
		case <-p.stop:
			return
		}
	}
}

// submit runs task on a worker, spawning one if all are busy and the pool is
// below max, else waiting for a free worker.
func (p *pool) submit(task func()) {
	select {
	case p.tasks <- task:
		return
	default:
	}
	if p.running.Add(1) <= p.max {
		p.wg.Add(1)
		go p.work(task)
		return
	}
	p.running.Add(-1)
	p.tasks <- task
}

// close stops idle workers and waits for running tasks to finish.
func (p *pool) close() {
	p.stopOnce.Do(func() { close(p.stop) })
	p.wg.Wait()
}
