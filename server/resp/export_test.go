package resp

// CommandNames lists every command of the table (subcommands as
// "parent|sub"), for the black-box fuzz target.
func CommandNames() []string {
	var out []string
	for _, c := range sortedCommands() {
		if len(c.subs) == 0 {
			out = append(out, c.name)
		}
		for _, s := range c.subs {
			out = append(out, s.name)
		}
	}
	return out
}

// RedisCommandSnapshot is testdata/redis-7.0-commands.tsv as name → group
// and version, for the test that checks it against a live redis-server.
func RedisCommandSnapshot() map[string][2]string {
	out := map[string][2]string{}
	for _, rc := range redisCommandSnapshot() {
		out[rc.name] = [2]string{rc.group, rc.since}
	}
	return out
}
