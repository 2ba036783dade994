// Package grafana holds the Grafana dashboard of the nodes' Prometheus
// metrics (zaris.json) and the test that keeps it honest: every query of
// every panel names only metrics a running node exports.
package grafana

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// dashboard is the part of Grafana's JSON model the test reads.
type dashboard struct {
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"` // a collapsed row's panels
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// query is one PromQL expression of the dashboard and where it is.
type query struct{ where, expr string }

func loadDashboard(t *testing.T) (dashboard, []query) {
	t.Helper()
	data, err := os.ReadFile("zaris.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("zaris.json: %v", err)
	}
	var qs []query
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %d %q has no query", p.ID, p.Title)
			}
			for _, tg := range p.Targets {
				qs = append(qs, query{fmt.Sprintf("panel %d %q", p.ID, p.Title), tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var s string
			if err := json.Unmarshal(v.Query, &s); err != nil {
				t.Fatalf("variable %s: query %s", v.Name, v.Query)
			}
			q.Query = s
		}
		qs = append(qs, query{"variable $" + v.Name, q.Query})
	}
	return d, qs
}

// promqlWords are the names in a PromQL expression that are not metrics:
// aggregations, functions, keywords.
var promqlWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio
		by without on ignoring group_left group_right bool offset and or unless inf nan
		rate irate increase delta idelta deriv predict_linear resets changes histogram_quantile histogram_count histogram_sum
		abs absent absent_over_time ceil floor round clamp clamp_min clamp_max exp ln log2 log10 sqrt sgn scalar vector time timestamp
		label_replace label_join sort sort_desc avg_over_time min_over_time max_over_time sum_over_time count_over_time
		quantile_over_time stddev_over_time last_over_time present_over_time day_of_week hour minute month year label_values`) {
		promqlWords[w] = true
	}
}

var labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,`)

// metricNames lists the metric names a PromQL expression selects: the
// identifiers outside label matchers ({…}), ranges ([…]), strings and
// grouping lists (by (…)) that are not functions or keywords. A Grafana
// label_values(metric, label) query names its metric.
func metricNames(expr string) ([]string, error) {
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		return []string{m[1]}, nil
	}
	var out []string
	isStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isPart := func(c byte) bool { return isStart(c) || c >= '0' && c <= '9' }
	// skipTo returns the index after the bracket closing the one at i,
	// stepping over strings.
	skipTo := func(i int, open, close byte) (int, error) {
		depth := 0
		for j := i; j < len(expr); j++ {
			switch c := expr[j]; c {
			case '"', '\'', '`':
				k := strings.IndexByte(expr[j+1:], c)
				if k < 0 {
					return 0, fmt.Errorf("unclosed string at %d", j)
				}
				j += k + 1
			case open:
				depth++
			case close:
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unclosed %c at %d", open, i)
	}
	depth := 0 // of parentheses
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '(':
			depth++
			i++
		case c == ')':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("unbalanced ) at %d", i)
			}
			i++
		case c == '{':
			j, err := skipTo(i, '{', '}')
			if err != nil {
				return nil, err
			}
			i = j
		case c == '[':
			j, err := skipTo(i, '[', ']')
			if err != nil {
				return nil, err
			}
			i = j
		case c == '"' || c == '\'' || c == '`':
			k := strings.IndexByte(expr[i+1:], c)
			if k < 0 {
				return nil, fmt.Errorf("unclosed string at %d", i)
			}
			i += k + 2
		case c == '$': // a Grafana variable
			i++
			for i < len(expr) && isPart(expr[i]) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			// a number or a duration (0.99, 1e3, 5m)
			for i < len(expr) && (isPart(expr[i]) || expr[i] == '.') {
				i++
			}
		case isStart(c):
			j := i
			for j < len(expr) && isPart(expr[j]) {
				j++
			}
			word := expr[i:j]
			i = j
			if !promqlWords[word] {
				out = append(out, word)
				continue
			}
			switch word {
			case "by", "without", "on", "ignoring", "group_left", "group_right":
				for i < len(expr) && expr[i] == ' ' {
					i++
				}
				if i < len(expr) && expr[i] == '(' { // a list of labels, not metrics
					k, err := skipTo(i, '(', ')')
					if err != nil {
						return nil, err
					}
					i = k
				}
			}
		default:
			i++
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("%d unclosed (", depth)
	}
	return out, nil
}

func TestMetricNamesExtraction(t *testing.T) {
	for expr, want := range map[string]string{
		`sum by (le, op) (rate(zaris_op_duration_seconds_bucket{instance=~"$instance", op!="get"}[$__rate_interval]))`: "[zaris_op_duration_seconds_bucket]",
		`histogram_quantile(0.99, sum(rate(a_bucket[5m])) by (le))`:                                                    "[a_bucket]",
		`1 - max(x{a="}"}) / max(y > 0) offset 5m`:                                                                     "[x y]",
		`zaris_memory_used_bytes / on (instance) group_left zaris_memory_max_bytes`:                                    "[zaris_memory_used_bytes zaris_memory_max_bytes]",
		`label_values(zaris_node_info, instance)`:                                                                      "[zaris_node_info]",
		`count(up == 1) and bool 1e3`:                                                                                  "[up]",
	} {
		got, err := metricNames(expr)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("metricNames(%s) = %v %v, want %s", expr, got, err, want)
		}
	}
	if _, err := metricNames(`sum(rate(x[5m])`); err == nil {
		t.Error("an unbalanced expression parsed")
	}
}

// exported reads a node's /metrics: the name of every sample (a
// histogram's _bucket, _sum and _count series under their own names) and
// the type of every family.
func exported(t *testing.T, nd *server.Node) (samples map[string]bool, types map[string]string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + nd.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %v", resp.StatusCode, err)
	}
	samples, types = map[string]bool{}, map[string]string{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		samples[name] = true
	}
	return samples, types
}

// Every metric every query of the dashboard names is exported by a node of
// a running two-node cluster (replication factor 2, so replication series
// exist) after traffic through the SDK, RESP and pub/sub.
func TestDashboardQueriesNameExportedMetrics(t *testing.T) {
	d, queries := loadDashboard(t)
	if d.Title == "" || len(queries) < 20 {
		t.Fatalf("dashboard %q with %d queries", d.Title, len(queries))
	}
	wanted := map[string][]string{} // metric → where
	for _, q := range queries {
		names, err := metricNames(q.expr)
		if err != nil {
			t.Fatalf("%s: %q: %v", q.where, q.expr, err)
		}
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", q.where, q.expr)
		}
		for _, n := range names {
			wanted[n] = append(wanted[n], q.where)
		}
	}
	// The sections the dashboard promises, by a metric each shows.
	for _, m := range []string{"zaris_ops_total", "zaris_op_duration_seconds_bucket", "zaris_memory_max_bytes",
		"zaris_store_evictions_total", "zaris_replication_lag_revisions", "zaris_failover_promotions_total",
		"zaris_migrations_in_flight", "zaris_pubsub_messages_delivered_total"} {
		if wanted[m] == nil {
			t.Errorf("no panel shows %s", m)
		}
	}

	c := clustertest.Start(t, 2, clustertest.Options{Mutate: func(cfg *server.Config) { cfg.ReplicationFactor = 2 }})
	ctx := context.Background()
	cl, err := sdk.Connect(ctx, c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 200 {
		k := fmt.Sprint("dash:", i)
		if _, err := cl.Put(ctx, k, []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Get(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	nd := c.Node("n1")
	rdb := redis.NewClient(&redis.Options{Addr: nd.Addr(server.EndpointRESP).String()})
	defer rdb.Close()
	sub := rdb.Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription is in place
		t.Fatal(err)
	}
	if err := rdb.Publish(ctx, "news", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "hello" {
		t.Fatalf("pub/sub: %v %v", msg, err)
	}
	if err := rdb.Set(ctx, c.KeyOwnedBy("n1", "dash:resp:"), "1", 0).Err(); err != nil { // a key n1 serves
		t.Fatal(err)
	}

	var samples map[string]bool
	var types map[string]string
	var missing []string
	// Poll until every name is there, or until the deadline, then report
	// what is still missing.
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	c.Eventually(time.Minute, "n1's /metrics", func() bool {
		samples, types = exported(t, nd)
		missing = missing[:0]
		for m := range wanted {
			if !samples[m] {
				missing = append(missing, m)
			}
		}
		return len(missing) == 0 || time.Now().After(deadline)
	})
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("%s (queried by %s) is not exported", m, strings.Join(wanted[m], ", "))
	}
	if types["zaris_op_duration_seconds"] != "histogram" {
		t.Errorf("zaris_op_duration_seconds is a %q", types["zaris_op_duration_seconds"])
	}
	if samples["zaris_no_such_metric"] || samples["zaris_op_duration_seconds"] {
		t.Error("the check would accept a name no sample has") // a histogram's base name has no sample
	}
	if len(missing) == 0 {
		t.Logf("%d queries, %d metrics, all exported by %s", len(queries), len(wanted), nd.HTTPAddr())
	}
}
