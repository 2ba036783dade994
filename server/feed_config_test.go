package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --feed-retention takes a size, a duration or both, from a flag, the
// environment or the YAML file, and reaches the store (R-OPS-4).
func TestFeedRetentionOption(t *testing.T) {
	c, err := LoadConfig([]string{"--feed-retention", "64MiB,10m"}, envMap(nil))
	require.NoError(t, err)
	require.Equal(t, int64(64<<20), c.FeedRetentionBytes)
	require.Equal(t, 10*time.Minute, c.FeedRetentionAge)
	sc := c.storeConfig(nil)
	require.Equal(t, 64<<20, sc.FeedRetentionBytes)
	require.Equal(t, 10*time.Minute, sc.FeedRetentionAge)

	c, err = LoadConfig(nil, envMap(map[string]string{"ZARIS_FEED_RETENTION": "90s"}))
	require.NoError(t, err)
	require.Equal(t, int64(0), c.FeedRetentionBytes)
	require.Equal(t, 90*time.Second, c.FeedRetentionAge)

	path := writeFile(t, "feed-retention: 1GiB\n")
	c, err = LoadConfig([]string{"--config", path}, envMap(nil))
	require.NoError(t, err)
	require.Equal(t, int64(1<<30), c.FeedRetentionBytes)

	for _, bad := range []string{"lots", "-5m", "2TiB"} {
		_, err := LoadConfig([]string{"--feed-retention", bad}, envMap(nil))
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "feed-retention", bad)
	}
}
