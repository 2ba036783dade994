package resp_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/zaris-io/zaris/server"
)

// BenchmarkACLPipelineGET: 100 pipelined GETs over loopback as the default
// user (no check) and as a restricted user (+@all -@dangerous ~app:*):
// the end-to-end cost of the ACL check per command.
func BenchmarkACLPipelineGET(b *testing.B) {
	n := startNode(b, func(c *server.Config) {})
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: n.RESPAddr().String()})
	defer admin.Close()
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "+@all", "-@dangerous", "~app:*").Err(); err != nil {
		b.Fatal(err)
	}
	if err := admin.Set(ctx, "app:1", "v", 0).Err(); err != nil {
		b.Fatal(err)
	}
	for _, user := range []string{"default", "app"} {
		b.Run(user, func(b *testing.B) {
			o := &redis.Options{Addr: n.RESPAddr().String(), PoolSize: 1}
			if user == "app" {
				o.Username, o.Password = "app", "pw"
			}
			c := redis.NewClient(o)
			defer c.Close()
			b.ResetTimer()
			for range b.N {
				p := c.Pipeline()
				for range 100 {
					p.Get(ctx, "app:1")
				}
				if _, err := p.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/cmd")
		})
	}
}
