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
