package clustertest

// The web console (/ui/, issue #18 item 5) in a real headless Chromium
// driven through the DevTools protocol (chromedp), against live clusters.
// One browser runs every check, to keep the wall time small. With
// ZARIS_CONSOLE_SCREENSHOTS=DIR the test also writes a PNG of each view
// there (docs/console/ holds the committed ones: `make console-screenshots`).

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
)

// chromiumPath finds a Chromium binary (Debian's chromium package).
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser is one headless Chromium tab that records every console error,
// uncaught exception and failed resource load of the pages it shows.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu     sync.Mutex
	errors []string
}

func newBrowser(t *testing.T, exe string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
		chromedp.WindowSize(1360, 1000),
		chromedp.Flag("headless", "new"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{t: t}
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithListener(b.record))
	b.ctx = ctx
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// Start the browser now so its start-up is not charged to a check.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium did not start: %v", err)
	}
	return b
}

// record keeps the console errors, exceptions and failed loads.
func (b *browser) record(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			msg = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(parts, " "))
		}
	case *runtime.EventExceptionThrown:
		msg = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			msg += " " + ev.ExceptionDetails.Exception.Description
		}
	case *log.EventEntryAdded:
		if strings.Contains(ev.Entry.Text, "net::ERR_NETWORK_CHANGED") {
			// Chromium aborts its loads in flight when the host's network
			// interfaces change: the chaos tests add and remove bridges and
			// veth links while this test runs beside them (make test runs
			// two test binaries at once). Neither the console nor the server
			// made it; the console's next poll loads the data again, and
			// the checks that wait for it still must see it.
			break
		}
		if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
			msg = fmt.Sprintf("log %s: %s (%s)", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
		}
	}
	if msg != "" {
		b.mu.Lock()
		b.errors = append(b.errors, msg)
		b.mu.Unlock()
	}
}

// run runs actions with a deadline.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, testscale.D(20*time.Second))
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// evalT evaluates a JavaScript expression (awaiting a promise) into a T.
func evalT[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, testscale.D(20*time.Second))
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// eval evaluates a JavaScript expression into *out.
func eval[T any](b *browser, expr string, out *T) {
	b.t.Helper()
	*out = evalT[T](b, expr)
}

// waitJS polls a boolean JavaScript expression until it holds.
func (b *browser) waitJS(within time.Duration, what, expr string) time.Duration {
	b.t.Helper()
	start := time.Now()
	deadline := start.Add(testscale.D(within))
	for {
		// A page between two loads has no body yet: that is "not yet".
		ok := evalT[bool](b, "(() => { try { return !!("+expr+") } catch (e) { return false } })()")
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			var body string
			eval(b, `document.body.innerText.slice(0, 2000)`, &body)
			b.t.Fatalf("%s: not within %v (%s); page text:\n%s", what, testscale.D(within), expr, body)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a synchronisation
	}
}

// noErrors fails on any console error recorded so far.
func (b *browser) noErrors(where string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errors) > 0 {
		b.t.Fatalf("%s: the page logged errors:\n%s", where, strings.Join(b.errors, "\n"))
	}
}

// expectedFailure forgets the recorded failed load of a request the test
// made on purpose, and fails if there was none.
func (b *browser) expectedFailure(status int) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	want := fmt.Sprintf("status of %d", status)
	for i, e := range b.errors {
		if strings.Contains(e, want) {
			b.errors = append(b.errors[:i], b.errors[i+1:]...)
			return
		}
	}
	b.t.Fatalf("no failed load with %s recorded: %q", want, b.errors)
}

// shoot writes a PNG of the page when ZARIS_CONSOLE_SCREENSHOTS is set.
func (b *browser) shoot(name string) {
	b.t.Helper()
	dir := os.Getenv("ZARIS_CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, testscale.D(20*time.Second))
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// servedRedirect: the node answered (and counted) the command but sent the
// client elsewhere, as it does while a partition moves.
func servedRedirect(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "MOVED") || strings.HasPrefix(msg, "TRYAGAIN") || strings.HasPrefix(msg, "ASK")
}

func consoleURL(nd *server.Node) string { return "http://" + nd.HTTPAddr().String() + "/ui/" }

func TestConsoleInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the browser test starts Chromium and two clusters")
	}
	exe := chromiumPath()
	if exe == "" {
		t.Skip("no chromium binary on PATH (Debian: apt-get install chromium; .ci/run installs it): the web console's browser test cannot run")
	}
	const token = "console-test-token"
	c := Start(t, 3, Options{Token: token, Mutate: func(cfg *server.Config) { cfg.ReplicationFactor = 2 }})
	b := newBrowser(t, exe)
	n1 := c.Node("n1")
	ctx := context.Background()

	// Signed out, a node with a token shows nothing but the sign-in form.
	b.run("open the console", chromedp.Navigate(consoleURL(n1)))
	b.waitJS(10*time.Second, "sign-in form", `!document.getElementById('login').hidden && document.body.dataset.access === 'none'`)
	var tables int
	eval(b, `document.querySelectorAll('#nodes tbody tr').length`, &tables)
	if tables != 0 {
		t.Fatalf("signed out, the page shows %d node rows", tables)
	}
	b.shoot("signin")
	// A wrong token is no better.
	b.run("wrong token", chromedp.SetValue(chromedp.ID("token"), "wrong"), chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)))
	b.waitJS(5*time.Second, "still signed out", `!document.getElementById('login').hidden && document.body.dataset.access === 'none'`)
	b.run("sign in", chromedp.SetValue(chromedp.ID("token"), token), chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)))
	b.waitJS(10*time.Second, "admin session", `document.body.dataset.access === 'admin' && document.body.dataset.ready === 'true'`)

	// Overview: the three live nodes, the partition map with its owners.
	// The three nodes, each with the state n1 has for it (alive on a quiet
	// machine; a loaded one may suspect a node for a while).
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for {
		var want []string
		for _, m := range n1.ClusterStatus().Nodes {
			want = append(want, string(m.ID)+"="+m.State)
		}
		slices.Sort(want)
		got := evalT[[]string](b, `[...document.querySelectorAll('#nodes tbody tr')].map(r => r.dataset.node + '=' + r.cells[1].querySelector('.badge').textContent).sort()`)
		if len(want) == 3 && slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes shown %v; n1 has %v", got, want)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not a synchronisation
	}
	// Each partition's tile and row name the owner in n1's applied map. A
	// loaded machine can fail a partition over meanwhile: the page must
	// follow, so the two are compared until they agree.
	deadline = time.Now().Add(testscale.D(10 * time.Second))
	for {
		var want []string
		for _, p := range n1.ClusterStatus().Partitions {
			want = append(want, fmt.Sprintf("P%d=%s", p.ID, p.ActiveOwner))
		}
		got := evalT[[]string](b, `[...document.querySelectorAll('#partitions tbody tr')].map(r => r.cells[0].textContent + '=' + r.cells[2].querySelector('b').textContent)`)
		tiles := evalT[[]string](b, `[...document.querySelectorAll('#pmap .cell')].map(e => e.querySelector('b').textContent + '=' + e.lastChild.textContent)`)
		if len(want) > 0 && slices.Equal(got, want) && slices.Equal(tiles, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition map: rows %v, tiles %v; the node's map says %v", got, tiles, want)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not a synchronisation
	}
	// Replication is reported by each partition's owner: n1 gathers it
	// from the others too.
	b.waitJS(10*time.Second, "replication of a partition another node owns",
		`[...document.querySelectorAll('#partitions tbody tr')].some(r => r.querySelector('td:nth-child(3) b').textContent !== 'n1' && r.querySelector('td:nth-child(7)').textContent.includes('streaming'))`)
	b.noErrors("overview")
	b.shoot("overview")

	// Live charts: traffic to n1 shows in its ops/s within 2 s.
	rdb := redis.NewClient(&redis.Options{Addr: n1.RESPAddr().String(), Password: token})
	defer rdb.Close()
	var own string
	// The first write waits for the replica's session (sync replication):
	// done before the clock starts, the traffic below is reads.
	// A loaded machine may be moving a partition: retry until n1 takes it.
	testscale.Eventually(t, 10*time.Second, 50*time.Millisecond, "a write n1 accepts", func() bool {
		own = c.KeyOwnedBy("n1", "chart:")
		return rdb.Set(ctx, own, "v", 0).Err() == nil
	})
	b.run("charts view", chromedp.Navigate(consoleURL(n1)+"#charts"))
	b.waitJS(10*time.Second, "charts sampling", `document.body.dataset.ready === 'true' && Number(document.getElementById('v-ops').dataset.samples) >= 3`)
	// Nothing else sends n1 operations: the chart settles at 0 first.
	b.waitJS(5*time.Second, "ops/s at rest", `document.getElementById('v-ops').dataset.value === '0'`)
	// The clock starts once n1 has served the first read of the traffic.
	if err := rdb.Get(ctx, own).Err(); err != nil && !servedRedirect(err) {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // bounded traffic: at most 5 s, stops when told
		defer close(done)
		end := time.Now().Add(testscale.D(5 * time.Second))
		for time.Now().Before(end) {
			select {
			case <-stop:
				return
			default:
			}
			if err := rdb.Get(ctx, own).Err(); err != nil && servedRedirect(err) {
				own = c.KeyOwnedBy("n1", "chart:") // the map moved on: follow it
			}
		}
	}()
	took := b.waitJS(2*time.Second, "ops/s chart follows traffic", `Number(document.getElementById('v-ops').dataset.value || 0) > 0`)
	close(stop)
	<-done
	t.Logf("ops/s chart rose %v after the traffic started", took)
	if os.Getenv("ZARIS_CONSOLE_SCREENSHOTS") != "" {
		// For the pictures only: a minute-like shape of mixed traffic.
		miss := c.KeyOwnedBy("n1", "chart-miss:")
		for round := 0; round < 12; round++ {
			end := time.Now().Add(time.Second)
			for i := 0; time.Now().Before(end) && i < 200*(1+round%4); i++ {
				rdb.Set(ctx, own, i, 0)
				rdb.Get(ctx, own)
				if i%3 == 0 {
					rdb.Get(ctx, miss)
				}
			}
			time.Sleep(time.Until(end)) // pacing the picture's traffic, not synchronising
		}
	}
	b.waitJS(3*time.Second, "hit ratio", `document.getElementById('v-hit').textContent.includes('%')`)
	b.noErrors("charts")
	b.shoot("charts")

	// Key browser: a key written through RESP is found by prefix on its owner.
	key := "console:user:42"
	var owner *server.Node
	var ordb *redis.Client
	testscale.Eventually(t, 10*time.Second, 50*time.Millisecond, "a write the key's owner accepts", func() bool {
		if ordb != nil {
			_ = ordb.Close()
		}
		owner = c.Owner(key)
		ordb = redis.NewClient(&redis.Options{Addr: owner.RESPAddr().String(), Password: token})
		return ordb.Set(ctx, key, `{"name":"Ada","plan":"pro"}`, time.Hour).Err() == nil
	})
	defer ordb.Close()
	for _, nd := range c.Nodes() { // every node's slow log records what follows
		nrdb := redis.NewClient(&redis.Options{Addr: nd.RESPAddr().String(), Password: token})
		err := nrdb.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err()
		_ = nrdb.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	cart := c.KeyOwnedBy(owner.Config().NodeID, "console:cart:")
	if err := ordb.HSet(ctx, cart, "sku-1", 2).Err(); err != nil {
		t.Fatal(err)
	}
	b.run("keys view", chromedp.Navigate(consoleURL(n1)+"#keys"))
	b.waitJS(10*time.Second, "keys view ready", `document.body.dataset.ready === 'true' && document.querySelectorAll('#key-node option').length === 4`)
	b.run("scan", chromedp.SetValue(chromedp.ID("key-prefix"), "console:"), chromedp.Click(chromedp.CSS(`#key-form button[type=submit]`)))
	rowSel := fmt.Sprintf(`#keys tr[data-key=%q]`, key)
	row := fmt.Sprintf(`document.querySelector('%s')`, rowSel)
	b.waitJS(5*time.Second, "the key written through RESP", row)
	var cellsText string
	eval(b, row+`.innerText`, &cellsText)
	for _, want := range []string{owner.Config().NodeID, "string", `{"name":"Ada","plan":"pro"}`, "min"} {
		if !strings.Contains(cellsText, want) {
			t.Fatalf("key row %q lacks %q", cellsText, want)
		}
	}
	b.waitJS(time.Second, "the hash too", fmt.Sprintf(`document.querySelector('#keys tr[data-key=%q]').innerText.includes('hash')`, cart))
	b.noErrors("keys")
	b.shoot("keys")

	// Delete asks first; Cancel keeps the key, Delete removes it on its owner.
	b.run("delete", chromedp.Click(chromedp.CSS(rowSel+` button.delete`)))
	b.waitJS(2*time.Second, "confirmation", `!document.getElementById('confirm').hidden`)
	b.shoot("keys-delete-confirm")
	b.run("cancel", chromedp.Click(chromedp.ID("confirm-cancel")))
	if n, err := ordb.Exists(ctx, key).Result(); err != nil || n != 1 {
		t.Fatalf("after Cancel EXISTS = %d, %v; want the key kept", n, err)
	}
	b.run("delete again", chromedp.Click(chromedp.CSS(rowSel+` button.delete`)),
		chromedp.Click(chromedp.ID("confirm-ok")))
	b.waitJS(5*time.Second, "row gone", "!"+row)
	if n, err := ordb.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Fatalf("after Delete EXISTS = %d, %v; want the key gone", n, err)
	}
	b.noErrors("delete")

	// Slow log: the commands above, from every node n1 sees alive (n1
	// shows the others': at least one besides itself).
	b.run("slowlog view", chromedp.Navigate(consoleURL(n1)+"#slowlog"))
	b.waitJS(10*time.Second, "slow log rows", fmt.Sprintf(`[...document.querySelectorAll('#slowlog tbody tr')].some(r => r.innerText.includes('hset %s sku-1 2') && r.innerText.includes(%q)) &&
		new Set([...document.querySelectorAll('#slowlog tbody tr td:nth-child(2)')].map(td => td.textContent)).size >= 2`, cart, owner.Config().NodeID))
	b.noErrors("slowlog")
	b.shoot("slowlog")

	// Events: the cluster's formation is on the timeline (leader, members).
	b.run("events view", chromedp.Navigate(consoleURL(n1)+"#events"))
	b.waitJS(10*time.Second, "events", `[...document.querySelectorAll('#timeline li')].some(li => li.innerText.includes('control-plane leader')) &&
		[...document.querySelectorAll('#timeline li')].some(li => li.innerText.includes('map committed')) &&
		new Set([...document.querySelectorAll('#timeline li > b')].map(e => e.textContent)).size >= 2`)
	b.noErrors("events")
	b.shoot("events")

	// The API itself refuses a delete without the token (401), whatever
	// the page shows.
	if st := b.fetchStatus("/ui/api/keys?key64="+base64.RawURLEncoding.EncodeToString([]byte(cart)), "DELETE", ""); st != http.StatusUnauthorized {
		t.Fatalf("DELETE without a token answered %d, want 401", st)
	}
	b.expectedFailure(http.StatusUnauthorized)
	if n, err := ordb.Exists(ctx, cart).Result(); err != nil || n != 1 {
		t.Fatalf("after a refused delete EXISTS = %d, %v; want the key kept", n, err)
	}

	// A node without a token: everyone reads, no one may delete.
	ro := Start(t, 1, Options{ClusterID: "open"})
	r1 := ro.Node("n1")
	rrdb := redis.NewClient(&redis.Options{Addr: r1.RESPAddr().String()})
	defer rrdb.Close()
	if err := rrdb.Set(ctx, "open:k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	b.run("read-only console", chromedp.Navigate(consoleURL(r1)+"#keys"))
	b.waitJS(10*time.Second, "read-only session", `document.body.dataset.access === 'read' && document.body.dataset.ready === 'true'`)
	b.run("scan read-only", chromedp.SetValue(chromedp.ID("key-prefix"), "open:"), chromedp.Click(chromedp.CSS(`#key-form button[type=submit]`)))
	b.waitJS(5*time.Second, "key listed read-only", `document.querySelector('#keys tr[data-key="open:k"]')`)
	var buttons int
	eval(b, `document.querySelectorAll('#keys button.delete').length`, &buttons)
	if buttons != 0 {
		t.Fatalf("read-only page shows %d delete buttons", buttons)
	}
	b.waitJS(time.Second, "read-only note", `!document.getElementById('key-readonly').hidden && document.getElementById('key-readonly').textContent.includes('admin')`)
	b.noErrors("read-only keys")
	b.shoot("keys-readonly")
	if st := b.fetchStatus("/ui/api/keys?key64="+base64.RawURLEncoding.EncodeToString([]byte("open:k")), "DELETE", ""); st != http.StatusForbidden {
		t.Fatalf("read-only DELETE answered %d, want 403", st)
	}
	b.expectedFailure(http.StatusForbidden)
	b.noErrors("read-only delete")
	if n, err := rrdb.Exists(ctx, "open:k").Result(); err != nil || n != 1 {
		t.Fatalf("after a refused delete EXISTS = %d, %v; want the key kept", n, err)
	}
}

// fetchStatus runs fetch(path) in the page and returns the HTTP status.
func (b *browser) fetchStatus(path, method, token string) int {
	b.t.Helper()
	headers := "{}"
	if token != "" {
		headers = fmt.Sprintf(`{Authorization: 'Bearer %s'}`, token)
	}
	return evalT[int](b, fmt.Sprintf(`fetch(%q, {method: %q, headers: %s}).then(r => r.status)`, path, method, headers))
}
