package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// --follow takes the primary's connection string from a flag, the
// environment or the YAML file; anything but a remote zaris:// or
// zariss:// connection string is refused naming the option (R-OPS-4).
func TestFollowOption(t *testing.T) {
	src := "zaris://10.0.0.1:7861,10.0.0.2:7861/default?token=t"
	c, err := LoadConfig([]string{"--follow", src}, envMap(nil))
	require.NoError(t, err)
	require.Equal(t, src, c.Follow)

	c, err = LoadConfig(nil, envMap(map[string]string{"ZARIS_FOLLOW": "zariss://p:7861/orders"}))
	require.NoError(t, err)
	require.Equal(t, "zariss://p:7861/orders", c.Follow)

	path := writeFile(t, "follow: zaris://p:7861/default\n")
	c, err = LoadConfig([]string{"--config", path}, envMap(nil))
	require.NoError(t, err)
	require.Equal(t, "zaris://p:7861/default", c.Follow)

	for _, bad := range []string{"zaris://inproc/x", "http://p:7801", "zaris://p:7861"} {
		_, err := LoadConfig([]string{"--follow", bad}, envMap(nil))
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "follow", bad)
	}
}
