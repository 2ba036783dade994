package resp

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// cjson for scripts, written in Go after lua-cjson 2.1.0 as Redis 7.0
// ships it: encode, decode, null, new and the settings functions, with
// lua-cjson's defaults, limits and error texts ("Expected value but found
// T_END at character 5"), numbers in its "%.14g" form.

// cjsonNull is cjson.null: a unique value JSON null decodes to and encodes
// from.
var cjsonNull = &lua.LUserData{Value: "cjson.null"}

// cjsonSettings are lua-cjson's per-module settings.
type cjsonSettings struct {
	sparseConvert  bool
	sparseRatio    int
	sparseSafe     int
	encodeMaxDepth int
	decodeMaxDepth int
	precision      int // significant digits of a number, 1..14
	keepBuffer     bool
	encodeInvalid  int // NaN and Inf: invalidOff (an error), invalidOn ("nan", "inf"), invalidNull
	decodeInvalid  bool
}

const (
	invalidOff = iota
	invalidOn
	invalidNull
)

func defaultCJSONSettings() cjsonSettings {
	return cjsonSettings{sparseRatio: 2, sparseSafe: 10, encodeMaxDepth: 1000, decodeMaxDepth: 1000,
		precision: 14, keepBuffer: true, decodeInvalid: true}
}

// cjsonConfig holds one cjson module's settings. The global cjson's is
// the node's (scripting.cjson), shared by every pooled state: in Redis
// one Lua state runs every script, so a setting a script makes lasts for
// the scripts after it, and so it does here whichever state runs them.
type cjsonConfig struct {
	mu sync.Mutex
	s  cjsonSettings
}

func newCJSONConfig() *cjsonConfig { return &cjsonConfig{s: defaultCJSONSettings()} }

func (c *cjsonConfig) get() cjsonSettings {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s
}

// openCJSON builds a cjson module table over cfg.
func openCJSON(L *lua.LState, cfg *cjsonConfig) *lua.LTable {
	t := L.NewTable()
	set := func(name string, fn lua.LGFunction) { t.RawSetString(name, L.NewFunction(fn)) }
	set("encode", func(L *lua.LState) int { return cjsonEncode(L, cfg.get()) })
	set("decode", func(L *lua.LState) int { return cjsonDecode(L, cfg.get()) })
	set("new", func(L *lua.LState) int { L.Push(openCJSON(L, newCJSONConfig())); return 1 })
	set("encode_sparse_array", func(L *lua.LState) int {
		cfg.mu.Lock()
		defer cfg.mu.Unlock()
		const fn = "encode_sparse_array"
		cjsonArgs(L, fn, 3)
		convert, ratio, safe := L.Get(1), L.Get(2), L.Get(3)
		cfg.s.sparseConvert = boolOption(L, fn, 1, convert, b2i(cfg.s.sparseConvert), []string{"off", "on"}) == 1
		cfg.s.sparseRatio = intOption(L, fn, 2, ratio, cfg.s.sparseRatio, 0, math.MaxInt32)
		cfg.s.sparseSafe = intOption(L, fn, 3, safe, cfg.s.sparseSafe, 0, math.MaxInt32)
		L.Push(lua.LBool(cfg.s.sparseConvert))
		L.Push(lua.LNumber(cfg.s.sparseRatio))
		L.Push(lua.LNumber(cfg.s.sparseSafe))
		return 3
	})
	intSetting := func(name string, field func(*cjsonSettings) *int, lo, hi int) {
		set(name, func(L *lua.LState) int {
			cfg.mu.Lock()
			defer cfg.mu.Unlock()
			cjsonArgs(L, name, 1)
			p := field(&cfg.s)
			*p = intOption(L, name, 1, L.Get(1), *p, lo, hi)
			L.Push(lua.LNumber(*p))
			return 1
		})
	}
	intSetting("encode_max_depth", func(s *cjsonSettings) *int { return &s.encodeMaxDepth }, 1, math.MaxInt32)
	intSetting("decode_max_depth", func(s *cjsonSettings) *int { return &s.decodeMaxDepth }, 1, math.MaxInt32)
	intSetting("encode_number_precision", func(s *cjsonSettings) *int { return &s.precision }, 1, 14)
	boolSetting := func(name string, field func(*cjsonSettings) *bool) {
		set(name, func(L *lua.LState) int {
			cfg.mu.Lock()
			defer cfg.mu.Unlock()
			cjsonArgs(L, name, 1)
			p := field(&cfg.s)
			*p = boolOption(L, name, 1, L.Get(1), b2i(*p), []string{"off", "on"}) == 1
			L.Push(lua.LBool(*p))
			return 1
		})
	}
	boolSetting("encode_keep_buffer", func(s *cjsonSettings) *bool { return &s.keepBuffer })
	boolSetting("decode_invalid_numbers", func(s *cjsonSettings) *bool { return &s.decodeInvalid })
	set("encode_invalid_numbers", func(L *lua.LState) int {
		cfg.mu.Lock()
		defer cfg.mu.Unlock()
		const fn = "encode_invalid_numbers"
		cjsonArgs(L, fn, 1)
		cfg.s.encodeInvalid = boolOption(L, fn, 1, L.Get(1), cfg.s.encodeInvalid, []string{"off", "on", "null"})
		if cfg.s.encodeInvalid == invalidNull {
			L.Push(lua.LString("null"))
		} else {
			L.Push(lua.LBool(cfg.s.encodeInvalid == invalidOn))
		}
		return 1
	})
	t.RawSetString("null", cjsonNull)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cjsonArgError is luaL_argerror naming the settings function fn (its
// name as lua-cjson's registration gives it, pcall or not).
func cjsonArgError(L *lua.LState, n int, fn, msg string) {
	lua51Error(L, "bad argument #%d to '%s' (%s)", n, fn, msg)
}

// cjsonArgs refuses more than max arguments to a settings function.
func cjsonArgs(L *lua.LState, fn string, max int) {
	if L.GetTop() > max {
		cjsonArgError(L, max+1, fn, "found too many arguments")
	}
}

// intOption is lua-cjson's json_integer_option: argument i (v), when
// given, must be an integer in [lo, hi] and replaces cur.
func intOption(L *lua.LState, fn string, i int, v lua.LValue, cur, lo, hi int) int {
	if v == lua.LNil {
		return cur
	}
	n, ok := lua51ToNumber(v)
	if !ok {
		cjsonArgError(L, i, fn, "number expected, got "+v.Type().String())
	}
	if n < float64(lo) || n >= float64(hi)+1 || math.IsNaN(n) {
		cjsonArgError(L, 1, fn, fmt.Sprintf("expected integer between %d and %d", lo, hi))
	}
	return int(n)
}

// boolOption is lua-cjson's json_enum_option over options (index 0 is
// false, 1 true): argument i (v), when given, is a boolean or one of
// options.
func boolOption(L *lua.LState, fn string, i int, v lua.LValue, cur int, options []string) int {
	switch v := v.(type) {
	case *lua.LNilType:
	case lua.LBool:
		cur = b2i(bool(v))
	case lua.LString, lua.LNumber:
		s := v.String()
		found := false
		for k, o := range options {
			if o == s {
				cur, found = k, true
			}
		}
		if !found {
			cjsonArgError(L, i, fn, "invalid option '"+s+"'")
		}
	default:
		cjsonArgError(L, i, fn, "string expected, got "+v.Type().String())
	}
	return cur
}

// --- encode ---

func cjsonEncode(L *lua.LState, cfg cjsonSettings) int {
	if L.GetTop() != 1 {
		cjsonArgError(L, 1, "encode", "expected 1 argument")
	}
	e := jsonEncoder{cfg: cfg}
	if err := e.value(L.Get(1), 0); err != nil {
		lua51Error(L, "%s", err.Error())
	}
	L.Push(lua.LString(e.b.String()))
	return 1
}

type jsonEncoder struct {
	cfg cjsonSettings
	b   bytes.Buffer
}

func cannotSerialise(v lua.LValue, why string) error {
	return fmt.Errorf("Cannot serialise %s: %s", v.Type().String(), why)
}

func (e *jsonEncoder) value(v lua.LValue, depth int) error {
	switch v := v.(type) {
	case lua.LBool:
		e.b.WriteString(strconv.FormatBool(bool(v)))
	case *lua.LNilType:
		e.b.WriteString("null")
	case lua.LNumber:
		return e.number(v)
	case lua.LString:
		jsonString(&e.b, string(v))
	case *lua.LUserData:
		if v == cjsonNull {
			e.b.WriteString("null")
			return nil
		}
		return cannotSerialise(v, "type not supported")
	case *lua.LTable:
		depth++
		if depth > e.cfg.encodeMaxDepth {
			return fmt.Errorf("Cannot serialise, excessive nesting (%d)", depth)
		}
		n, err := e.arrayLength(v)
		if err != nil {
			return err
		}
		if n > 0 {
			e.b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					e.b.WriteByte(',')
				}
				if err := e.value(v.RawGetInt(i), depth); err != nil {
					return err
				}
			}
			e.b.WriteByte(']')
			return nil
		}
		return e.object(v, depth)
	default:
		return cannotSerialise(v, "type not supported")
	}
	return nil
}

// arrayLength is lua-cjson's lua_array_length: the largest key of a
// table whose keys are all positive integers (0 for any other table, an
// object), or an error for an excessively sparse one.
func (e *jsonEncoder) arrayLength(t *lua.LTable) (int, error) {
	max, items := 0, 0
	isArray := true
	t.ForEach(func(k, _ lua.LValue) {
		if !isArray {
			return
		}
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) != math.Floor(float64(n)) || n < 1 {
			isArray = false
			return
		}
		if float64(n) > float64(max) {
			max = int(min(float64(n), math.MaxInt32))
		}
		items++
	})
	if !isArray {
		return 0, nil
	}
	if e.cfg.sparseRatio > 0 && max > items*e.cfg.sparseRatio && max > e.cfg.sparseSafe {
		if !e.cfg.sparseConvert {
			return 0, cannotSerialise(t, "excessively sparse array")
		}
		return 0, nil
	}
	return max, nil
}

func (e *jsonEncoder) object(t *lua.LTable, depth int) error {
	e.b.WriteByte('{')
	first := true
	var err error
	forEachInOrder(t, func(k, val lua.LValue) {
		if err != nil {
			return
		}
		if !first {
			e.b.WriteByte(',')
		}
		first = false
		switch k := k.(type) {
		case lua.LString:
			jsonString(&e.b, string(k))
		case lua.LNumber:
			e.b.WriteByte('"')
			if err = e.number(k); err != nil {
				return
			}
			e.b.WriteByte('"')
		default:
			err = cannotSerialise(k, "table key must be a number or string")
			return
		}
		e.b.WriteByte(':')
		err = e.value(val, depth)
	})
	if err != nil {
		return err
	}
	e.b.WriteByte('}')
	return nil
}

func (e *jsonEncoder) number(n lua.LNumber) error {
	f := float64(n)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		switch e.cfg.encodeInvalid {
		case invalidNull:
			e.b.WriteString("null")
			return nil
		case invalidOn:
			switch {
			case math.IsNaN(f):
				e.b.WriteString("nan")
			case f > 0:
				e.b.WriteString("inf")
			default:
				e.b.WriteString("-inf")
			}
			return nil
		}
		return cannotSerialise(n, "must not be NaN or Inf")
	}
	e.b.WriteString(formatNumberG(f, e.cfg.precision))
	return nil
}

// jsonString writes s quoted the way lua-cjson does ("/" escaped too).
func jsonString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// formatLuaNumber prints a number as Lua 5.1 does ("%.14g").
func formatLuaNumber(f float64) string { return formatNumberG(f, 14) }

// formatNumberG is C's "%.<prec>g" for a finite number.
func formatNumberG(f float64, prec int) string {
	if f == math.Trunc(f) && math.Abs(f) < math.Pow10(prec) {
		return strconv.FormatInt(int64(f), 10)
	}
	// Go's 'g' with a precision drops trailing zeros and writes a two-digit
	// exponent, as C's %g does.
	return strconv.FormatFloat(f, 'g', prec, 64)
}

// --- decode ---

func cjsonDecode(L *lua.LState, cfg cjsonSettings) int {
	if L.GetTop() != 1 {
		cjsonArgError(L, 1, "decode", "expected 1 argument")
	}
	s := L.CheckString(1)
	if len(s) >= 2 && (s[0] == 0 || s[1] == 0) {
		lua51Error(L, "JSON parser does not support UTF-16 or UTF-32")
	}
	// lua-cjson reads a C string: a NUL byte ends the text.
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	d := jsonDecoder{L: L, cfg: cfg, s: s}
	v, err := d.parse()
	if err != nil {
		lua51Error(L, "%s", err.Error())
	}
	L.Push(v)
	return 1
}

type jsonTokenType int

const (
	tObjBegin jsonTokenType = iota
	tObjEnd
	tArrBegin
	tArrEnd
	tString
	tNumber
	tBoolean
	tNull
	tColon
	tComma
	tEnd
	tError
)

var jsonTokenNames = [...]string{"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING",
	"T_NUMBER", "T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_ERROR"}

type jsonToken struct {
	typ   jsonTokenType
	at    int // byte offset of the token (of the fault, for tError)
	str   string
	num   float64
	b     bool
	fault string // tError: what is wrong
}

// jsonDecoder is lua-cjson's parser: a tokenizer and a recursive descent
// bounded by decode_max_depth.
type jsonDecoder struct {
	L     *lua.LState
	cfg   cjsonSettings
	s     string
	pos   int
	depth int
	buf   []byte
}

func (d *jsonDecoder) parse() (lua.LValue, error) {
	tok := d.next()
	v, err := d.value(tok)
	if err != nil {
		return nil, err
	}
	if tok := d.next(); tok.typ != tEnd {
		return nil, expected("the end", tok)
	}
	return v, nil
}

func expected(what string, tok jsonToken) error {
	found := tok.fault
	if tok.typ != tError {
		found = jsonTokenNames[tok.typ]
	}
	return fmt.Errorf("Expected %s but found %s at character %d", what, found, tok.at+1)
}

func (d *jsonDecoder) descend() error {
	d.depth++
	if d.depth > d.cfg.decodeMaxDepth {
		return fmt.Errorf("Found too many nested data structures (%d) at character %d", d.depth, d.pos)
	}
	return nil
}

func (d *jsonDecoder) value(tok jsonToken) (lua.LValue, error) {
	switch tok.typ {
	case tString:
		return lua.LString(tok.str), nil
	case tNumber:
		return lua.LNumber(tok.num), nil
	case tBoolean:
		return lua.LBool(tok.b), nil
	case tNull:
		return cjsonNull, nil
	case tObjBegin:
		return d.object()
	case tArrBegin:
		return d.array()
	}
	return nil, expected("value", tok)
}

func (d *jsonDecoder) object() (lua.LValue, error) {
	if err := d.descend(); err != nil {
		return nil, err
	}
	t := d.L.NewTable()
	tok := d.next()
	if tok.typ == tObjEnd {
		d.depth--
		return t, nil
	}
	for {
		if tok.typ != tString {
			return nil, expected("object key string", tok)
		}
		key := tok.str
		if tok = d.next(); tok.typ != tColon {
			return nil, expected("colon", tok)
		}
		v, err := d.value(d.next())
		if err != nil {
			return nil, err
		}
		t.RawSetString(key, v)
		tok = d.next()
		if tok.typ == tObjEnd {
			d.depth--
			return t, nil
		}
		if tok.typ != tComma {
			return nil, expected("comma or object end", tok)
		}
		tok = d.next()
	}
}

func (d *jsonDecoder) array() (lua.LValue, error) {
	if err := d.descend(); err != nil {
		return nil, err
	}
	t := d.L.NewTable()
	tok := d.next()
	if tok.typ == tArrEnd {
		d.depth--
		return t, nil
	}
	for i := 1; ; i++ {
		v, err := d.value(tok)
		if err != nil {
			return nil, err
		}
		t.RawSetInt(i, v)
		tok = d.next()
		if tok.typ == tArrEnd {
			d.depth--
			return t, nil
		}
		if tok.typ != tComma {
			return nil, expected("comma or array end", tok)
		}
		tok = d.next()
	}
}

func (d *jsonDecoder) next() jsonToken {
	s := d.s
	for d.pos < len(s) && (s[d.pos] == ' ' || s[d.pos] == '\t' || s[d.pos] == '\n' || s[d.pos] == '\r') {
		d.pos++
	}
	at := d.pos
	if at >= len(s) {
		return jsonToken{typ: tEnd, at: at}
	}
	if typ, ok := jsonPunctuation(s[at]); ok {
		d.pos++
		return jsonToken{typ: typ, at: at}
	}
	rest := s[at:]
	switch ch := s[at]; {
	case ch == '"':
		return d.str()
	case ch == '-' || '0' <= ch && ch <= '9':
		if !d.cfg.decodeInvalid && invalidJSONNumber(rest) {
			return jsonToken{typ: tError, at: at, fault: "invalid number"}
		}
		return d.number()
	case strings.HasPrefix(rest, "true"):
		d.pos += 4
		return jsonToken{typ: tBoolean, at: at, b: true}
	case strings.HasPrefix(rest, "false"):
		d.pos += 5
		return jsonToken{typ: tBoolean, at: at}
	case strings.HasPrefix(rest, "null"):
		d.pos += 4
		return jsonToken{typ: tNull, at: at}
	case d.cfg.decodeInvalid && invalidJSONNumber(rest):
		return d.number()
	}
	return jsonToken{typ: tError, at: at, fault: "invalid token"}
}

func jsonPunctuation(c byte) (jsonTokenType, bool) {
	switch c {
	case '{':
		return tObjBegin, true
	case '}':
		return tObjEnd, true
	case '[':
		return tArrBegin, true
	case ']':
		return tArrEnd, true
	case ':':
		return tColon, true
	case ',':
		return tComma, true
	}
	return 0, false
}

// invalidJSONNumber is lua-cjson's json_is_invalid_number: a number JSON
// does not allow but strtod reads (a plus sign, hex, leading zeros, inf,
// nan).
func invalidJSONNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '+' {
		return true
	}
	if s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	if s[0] == '0' {
		return len(s) > 1 && (s[1]|0x20 == 'x' || '0' <= s[1] && s[1] <= '9')
	}
	if s[0] <= '9' {
		return false
	}
	return hasPrefixFold(s, "inf") || hasPrefixFold(s, "nan")
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// number reads a number as C's strtod does from d.pos.
func (d *jsonDecoder) number() jsonToken {
	at := d.pos
	n, f := cStrtod(d.s[at:])
	if n == 0 {
		return jsonToken{typ: tError, at: at, fault: "invalid number"}
	}
	d.pos += n
	return jsonToken{typ: tNumber, at: at, num: f}
}

// str reads a string token; escapes as lua-cjson decodes them, \u with
// surrogate pairs to UTF-8.
func (d *jsonDecoder) str() jsonToken {
	s := d.s
	at := d.pos
	d.pos++ // the opening quote
	d.buf = d.buf[:0]
	for {
		if d.pos >= len(s) {
			return jsonToken{typ: tError, at: d.pos, fault: "unexpected end of string"}
		}
		ch := s[d.pos]
		if ch == '"' {
			d.pos++
			return jsonToken{typ: tString, at: at, str: string(d.buf)}
		}
		if ch != '\\' {
			d.buf = append(d.buf, ch)
			d.pos++
			continue
		}
		if d.pos+1 >= len(s) {
			return jsonToken{typ: tError, at: d.pos, fault: "invalid escape code"}
		}
		switch e := s[d.pos+1]; e {
		case '"', '\\', '/':
			d.buf = append(d.buf, e)
		case 'b':
			d.buf = append(d.buf, '\b')
		case 'f':
			d.buf = append(d.buf, '\f')
		case 'n':
			d.buf = append(d.buf, '\n')
		case 'r':
			d.buf = append(d.buf, '\r')
		case 't':
			d.buf = append(d.buf, '\t')
		case 'u':
			n, ok := d.unicodeEscape()
			if !ok {
				return jsonToken{typ: tError, at: d.pos, fault: "invalid unicode escape code"}
			}
			d.pos += n
			continue
		default:
			return jsonToken{typ: tError, at: d.pos, fault: "invalid escape code"}
		}
		d.pos += 2
	}
}

// unicodeEscape appends the code point of the \uXXXX (and its low
// surrogate's \uXXXX) at d.pos and returns the bytes it spans.
func (d *jsonDecoder) unicodeEscape() (int, bool) {
	hex4 := func(at int) (rune, bool) {
		if at+4 > len(d.s) {
			return 0, false
		}
		v, err := strconv.ParseUint(d.s[at:at+4], 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex4(d.pos + 2)
	if !ok {
		return 0, false
	}
	n := 6
	switch {
	case r >= 0xdc00 && r <= 0xdfff:
		return 0, false // a low surrogate alone
	case r >= 0xd800 && r <= 0xdbff:
		if d.pos+12 > len(d.s) || d.s[d.pos+6] != '\\' || d.s[d.pos+7] != 'u' {
			return 0, false
		}
		lo, ok := hex4(d.pos + 8)
		if !ok || lo < 0xdc00 || lo > 0xdfff {
			return 0, false
		}
		r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
		n = 12
	}
	d.buf = utf8.AppendRune(d.buf, r)
	return n, true
}
