package respdiff

import "strings"

// Arg is one argument of a command's grammar, as redis-server's COMMAND
// DOCS describes it (Redis 7): a typed value, a pure token, a choice
// (oneof) or a sequence (block), optional and/or repeated.
type Arg struct {
	Name          string
	Type          string // key, string, integer, double, pattern, unix-time, pure-token, oneof, block
	Token         string // the keyword before the value, if any
	Optional      bool
	Multiple      bool
	MultipleToken bool // the token repeats before every value
	Args          []*Arg
}

// Grammar maps a lower-case command name ("get", "xgroup|create") to its
// arguments after the name (and subcommand).
type Grammar map[string][]*Arg

// ParseDocs reads a RESP2 reply of COMMAND DOCS (name, doc, name, doc, …;
// subcommands nested the same way).
func ParseDocs(v Value) Grammar {
	g := Grammar{}
	parseDocList(v, g)
	return g
}

func parseDocList(v Value, g Grammar) {
	for i := 0; i+1 < len(v.Elems); i += 2 {
		name := strings.ToLower(v.Elems[i].Str)
		doc := fields(v.Elems[i+1])
		var args []*Arg
		for _, a := range doc["arguments"].Elems {
			args = append(args, parseArg(a))
		}
		g[name] = args
		if subs, ok := doc["subcommands"]; ok {
			parseDocList(subs, g)
		}
	}
}

func parseArg(v Value) *Arg {
	f := fields(v)
	a := &Arg{Name: f["name"].Str, Type: f["type"].Str, Token: f["token"].Str}
	for _, fl := range f["flags"].Elems {
		switch fl.Str {
		case "optional":
			a.Optional = true
		case "multiple":
			a.Multiple = true
		case "multiple_token":
			a.MultipleToken = true
		}
	}
	for _, sub := range f["arguments"].Elems {
		a.Args = append(a.Args, parseArg(sub))
	}
	return a
}

// fields reads a flat key, value, … array (or a RESP3 map) into a map.
func fields(v Value) map[string]Value {
	m := map[string]Value{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		m[v.Elems[i].Str] = v.Elems[i+1]
	}
	return m
}
