package resp

import (
	"math"
	"strconv"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/store"
)

// Geo commands (issue #13 item 5). A geo set is a sorted set scored by
// 52-bit geohashes (server/store/geohash.go), so GEOADD is a ZADD with
// computed scores, logged and replicated as one; the searches read the
// geohash cells covering the shape in one store call and keep the members
// inside it, with redis-server's arithmetic, order and printing.

func init() {
	g := func(c *command) *command { c.group = "geo"; return keyed(c) }
	register(
		g(&command{name: "geoadd", arity: -5, flags: writeFlags, since: "3.2.0",
			summary: "Adds one or more members to a geospatial index ([NX|XX] [CH] longitude latitude member …).", run: cmdGeoAdd}),
		g(&command{name: "geodist", arity: -4, flags: flagReadonly, since: "3.2.0",
			summary: "Returns the distance between two members of a geospatial index ([M|KM|FT|MI]).", run: cmdGeoDist}),
		g(&command{name: "geohash", arity: -2, flags: flagReadonly, since: "3.2.0",
			summary: "Returns members from a geospatial index as geohash strings.", run: cmdGeoHash}),
		g(&command{name: "geopos", arity: -2, flags: flagReadonly, since: "3.2.0",
			summary: "Returns the longitude and latitude of members from a geospatial index.", run: cmdGeoPos}),
		g(&command{name: "geosearch", arity: -7, flags: flagReadonly, since: "6.2.0",
			summary: "Queries a geospatial index for members inside an area of a box or a circle (FROMMEMBER|FROMLONLAT, BYRADIUS|BYBOX, ASC|DESC, COUNT [ANY], WITHCOORD, WITHDIST, WITHHASH).",
			run:     geoSearchCmd(geoSearch)}),
		g(&command{name: "geosearchstore", arity: -8, flags: writeFlags, last: 2, since: "6.2.0",
			summary: "Queries a geospatial index for members inside an area of a box or a circle and stores the result in another key ([STOREDIST]).",
			run:     geoSearchCmd(geoSearch | geoSearchStore)}),
		g(&command{name: "georadius", arity: -6, flags: writeFlags, keys: geoRadiusKeys(6), since: "3.2.0",
			summary: "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result (deprecated: GEOSEARCH).",
			run:     geoSearchCmd(geoByCoords)}),
		g(&command{name: "georadius_ro", arity: -6, flags: flagReadonly, since: "3.2.10",
			summary: "Returns members from a geospatial index that are within a distance from a coordinate (deprecated: GEOSEARCH).",
			run:     geoSearchCmd(geoByCoords | geoNoStore)}),
		g(&command{name: "georadiusbymember", arity: -5, flags: writeFlags, keys: geoRadiusKeys(5), since: "3.2.0",
			summary: "Queries a geospatial index for members within a distance from a member, optionally stores the result (deprecated: GEOSEARCH).",
			run:     geoSearchCmd(geoByMember)}),
		g(&command{name: "georadiusbymember_ro", arity: -5, flags: flagReadonly, since: "3.2.10",
			summary: "Returns members from a geospatial index that are within a distance from a member (deprecated: GEOSEARCH).",
			run:     geoSearchCmd(geoByMember | geoNoStore)}),
	)
}

// geoRadiusKeys finds GEORADIUS's keys: the source, and the STORE or
// STOREDIST destination among the options after base.
func geoRadiusKeys(base int) func(args [][]byte) []int {
	return func(args [][]byte) []int {
		if len(args) < 2 {
			return nil
		}
		out := []int{1}
		for i := base; i+1 < len(args); i++ {
			if eq(args[i], "STORE") || eq(args[i], "STOREDIST") {
				out = append(out, i+1)
				i++
			}
		}
		return out
	}
}

// parseLonLat reads a longitude, latitude pair with Redis's errors.
func parseLonLat(c *conn, lon, lat []byte) (float64, float64, bool) {
	x, ok1 := parseFloat(lon)
	if !ok1 {
		c.err(msgNotFloat)
		return 0, 0, false
	}
	y, ok2 := parseFloat(lat)
	if !ok2 {
		c.err(msgNotFloat)
		return 0, 0, false
	}
	if !store.GeoValid(x, y) {
		c.err("ERR invalid longitude,latitude pair " + cFixed6(x) + "," + cFixed6(y))
		return 0, 0, false
	}
	return x, y, true
}

// cFixed6 is C's printf %f: six decimals, infinities spelled inf and -inf.
func cFixed6(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}

// geoUnit is the metres in one unit, 0 for an unknown unit.
func geoUnit(b []byte) float64 {
	switch {
	case eq(b, "m"):
		return 1
	case eq(b, "km"):
		return 1000
	case eq(b, "ft"):
		return 0.3048
	case eq(b, "mi"):
		return 1609.34
	}
	return 0
}

const msgBadUnit = "ERR unsupported unit provided. please use M, KM, FT, MI"

func cmdGeoAdd(c *conn, args [][]byte) {
	var nx, xx bool
	var flags [][]byte
	i := 2
	for ; i < len(args); i++ {
		switch {
		case eq(args[i], "NX"):
			nx = true
			flags = append(flags, []byte("NX"))
			continue
		case eq(args[i], "XX"):
			xx = true
			flags = append(flags, []byte("XX"))
			continue
		case eq(args[i], "CH"):
			flags = append(flags, []byte("CH"))
			continue
		}
		break
	}
	rest := args[i:]
	if len(rest)%3 != 0 || nx && xx || len(rest) == 0 {
		c.err(msgSyntax)
		return
	}
	zargs := flags
	for j := 0; j < len(rest); j += 3 {
		lon, lat, ok := parseLonLat(c, rest[j], rest[j+1])
		if !ok {
			return
		}
		score, _ := store.GeoScore(lon, lat)
		zargs = append(zargs, kv.FormatFloat(score), rest[j+2])
	}
	c.exec(kv.CmdZAdd, args[1], zargs, shapePlain)
}

// geoScores reads the stored scores of members (nil: absent).
func (c *conn) geoScores(key []byte, members [][]byte) ([]*float64, bool) {
	op := kv.CmdZMScore
	if len(members) == 0 {
		op = kv.CmdZCard // GEOPOS/GEOHASH key alone: only the key's type is checked (Redis answers [])
	}
	r := c.execRaw(op, key, members...)
	if r.Status != kv.StatusSuccess {
		c.writeReply(r, shapePlain)
		return nil, false
	}
	out := make([]*float64, len(members))
	for i, e := range r.Array {
		if e.Type == kv.ReplyNil {
			continue
		}
		f, err := strconv.ParseFloat(string(e.Bulk), 64)
		if err == nil {
			out[i] = &f
		}
	}
	return out, true
}

func distText(d float64) []byte { return strconv.AppendFloat(nil, d, 'f', 4, 64) }

func cmdGeoDist(c *conn, args [][]byte) {
	unit := 1.0
	switch {
	case len(args) == 5:
		if unit = geoUnit(args[4]); unit == 0 {
			c.err(msgBadUnit)
			return
		}
	case len(args) > 5:
		c.err(msgSyntax)
		return
	}
	s, ok := c.geoScores(args[1], args[2:4])
	if !ok {
		return
	}
	if s[0] == nil || s[1] == nil {
		c.out.Null()
		return
	}
	lon1, lat1 := store.GeoPoint(*s[0])
	lon2, lat2 := store.GeoPoint(*s[1])
	c.out.Bulk(distText(store.GeoDistance(lon1, lat1, lon2, lat2) / unit))
}

func cmdGeoHash(c *conn, args [][]byte) {
	s, ok := c.geoScores(args[1], args[2:])
	if !ok {
		return
	}
	c.out.Array(len(s))
	for _, v := range s {
		if v == nil {
			c.out.Null()
			continue
		}
		c.out.Bulk(store.GeoHashString(*v))
	}
}

func cmdGeoPos(c *conn, args [][]byte) {
	s, ok := c.geoScores(args[1], args[2:])
	if !ok {
		return
	}
	c.out.Array(len(s))
	for _, v := range s {
		if v == nil {
			c.out.NullArray()
			continue
		}
		lon, lat := store.GeoPoint(*v)
		c.out.Array(2)
		c.out.DoubleText(store.GeoCoordText(lon))
		c.out.DoubleText(store.GeoCoordText(lat))
	}
}

// geoFlags say which search command runs.
type geoFlags uint8

const (
	geoByCoords    geoFlags = 1 << iota // GEORADIUS: key lon lat radius unit
	geoByMember                         // GEORADIUSBYMEMBER: key member radius unit
	geoSearch                           // GEOSEARCH: key FROM… BY…
	geoSearchStore                      // GEOSEARCHSTORE: dst key FROM… BY…
	geoNoStore                          // the _RO forms: no STORE option
)

// geoQuery is a parsed search.
type geoQuery struct {
	src         []byte
	shape       store.GeoShape
	unit        float64 // metres per unit of the shape's figures
	fromMember  []byte  // FROMMEMBER / GEORADIUSBYMEMBER's member
	withDist    bool
	withHash    bool
	withCoord   bool
	any         bool
	sort        int // 0 none, 1 ascending, -1 descending
	count       int64
	storeKey    []byte
	storeDist   bool
	hasFrom     bool
	hasBy       bool
	centreKnown bool
}

// parseDistance reads a radius and its unit.
func parseDistance(c *conn, v, unit []byte, what string) (float64, float64, bool) {
	d, ok := parseFloat(v)
	if !ok {
		c.err("ERR need numeric " + what)
		return 0, 0, false
	}
	if d < 0 {
		c.err("ERR radius cannot be negative")
		return 0, 0, false
	}
	u := geoUnit(unit)
	if u == 0 {
		c.err(msgBadUnit)
		return 0, 0, false
	}
	return d, u, true
}

// parseGeoQuery parses a search in Redis's order: the fixed arguments,
// then the options left to right (a FROMMEMBER member is looked up as it
// is met), then the combination rules. exists says whether the source
// key holds a geo set; centre reads a member's position.
func parseGeoQuery(c *conn, args [][]byte, flags geoFlags, exists bool, centre func(m []byte) (float64, float64, bool)) (geoQuery, bool) {
	var q geoQuery
	base := 0
	switch {
	case flags&geoByCoords != 0:
		q.src, base = args[1], 6
		lon, lat, ok := parseLonLat(c, args[2], args[3])
		if !ok {
			return q, false
		}
		q.shape.Lon, q.shape.Lat = lon, lat
		r, u, ok := parseDistance(c, args[4], args[5], "radius")
		if !ok {
			return q, false
		}
		q.shape.Radius, q.unit = r, u
	case flags&geoByMember != 0:
		q.src, base = args[1], 5
		if exists {
			lon, lat, ok := centre(args[2])
			if !ok {
				c.err("ERR could not decode requested zset member")
				return q, false
			}
			q.shape.Lon, q.shape.Lat = lon, lat
			r, u, ok := parseDistance(c, args[3], args[4], "radius")
			if !ok {
				return q, false
			}
			q.shape.Radius, q.unit = r, u
		}
	case flags&geoSearchStore != 0:
		q.storeKey, q.src, base = args[1], args[2], 3
	default:
		q.src, base = args[1], 2
	}
	opts := args[base:]
	for i := 0; i < len(opts); i++ {
		left := len(opts) - i - 1
		a := opts[i]
		switch {
		case eq(a, "WITHDIST"):
			q.withDist = true
		case eq(a, "WITHHASH"):
			q.withHash = true
		case eq(a, "WITHCOORD"):
			q.withCoord = true
		case eq(a, "ANY"):
			q.any = true
		case eq(a, "ASC"):
			q.sort = 1
		case eq(a, "DESC"):
			q.sort = -1
		case eq(a, "COUNT") && left >= 1:
			n, ok := parseInt(opts[i+1])
			if !ok {
				c.err(msgNotInteger)
				return q, false
			}
			if n <= 0 {
				c.err("ERR COUNT must be > 0")
				return q, false
			}
			q.count = n
			i++
		case (eq(a, "STORE") || eq(a, "STOREDIST")) && left >= 1 && flags&(geoNoStore|geoSearch) == 0:
			q.storeKey, q.storeDist = opts[i+1], eq(a, "STOREDIST")
			i++
		case eq(a, "STOREDIST") && flags&geoSearchStore != 0:
			q.storeDist = true
		case eq(a, "FROMMEMBER") && left >= 1 && flags&geoSearch != 0 && !q.centreKnown:
			if exists {
				lon, lat, ok := centre(opts[i+1])
				if !ok {
					c.err("ERR could not decode requested zset member")
					return q, false
				}
				q.shape.Lon, q.shape.Lat = lon, lat
			}
			q.fromMember, q.hasFrom = opts[i+1], true
			i++
		case eq(a, "FROMLONLAT") && left >= 2 && flags&geoSearch != 0 && q.fromMember == nil:
			lon, lat, ok := parseLonLat(c, opts[i+1], opts[i+2])
			if !ok {
				return q, false
			}
			q.shape.Lon, q.shape.Lat = lon, lat
			q.centreKnown, q.hasFrom = true, true
			i += 2
		case eq(a, "BYRADIUS") && left >= 2 && flags&geoSearch != 0 && !q.shape.Box:
			r, u, ok := parseDistance(c, opts[i+1], opts[i+2], "radius")
			if !ok {
				return q, false
			}
			q.shape.Radius, q.unit, q.hasBy = r, u, true
			i += 2
		case eq(a, "BYBOX") && left >= 3 && flags&geoSearch != 0 && !(q.hasBy && !q.shape.Box):
			w, okW := parseFloat(opts[i+1])
			if !okW {
				c.err("ERR need numeric width")
				return q, false
			}
			h, okH := parseFloat(opts[i+2])
			if !okH {
				c.err("ERR need numeric height")
				return q, false
			}
			if w < 0 || h < 0 {
				c.err("ERR height or width cannot be negative")
				return q, false
			}
			u := geoUnit(opts[i+3])
			if u == 0 {
				c.err(msgBadUnit)
				return q, false
			}
			q.shape.Box, q.shape.Width, q.shape.Height, q.unit, q.hasBy = true, w, h, u, true
			i += 3
		default:
			c.err(msgSyntax)
			return q, false
		}
	}
	switch {
	case q.storeKey != nil && (q.withDist || q.withHash || q.withCoord):
		what := "STORE option in GEORADIUS"
		if flags&geoSearchStore != 0 {
			what = "GEOSEARCHSTORE"
		}
		c.err("ERR " + what + " is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		return q, false
	case flags&geoSearch != 0 && !q.hasFrom:
		c.err("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + string(args[0]))
		return q, false
	case flags&geoSearch != 0 && !q.hasBy:
		c.err("ERR exactly one of BYRADIUS and BYBOX can be specified for " + string(args[0]))
		return q, false
	case q.any && q.count == 0:
		c.err("ERR the ANY argument requires COUNT argument")
		return q, false
	}
	// The shape's figures are in its unit; the search works in metres.
	q.shape.Radius *= q.unit
	q.shape.Width *= q.unit
	q.shape.Height *= q.unit
	if q.count != 0 && q.sort == 0 && !q.any {
		q.sort = 1 // the closest COUNT: sorted, as Redis does
	}
	return q, true
}

func geoSearchCmd(flags geoFlags) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		src := args[1]
		if flags&geoSearchStore != 0 {
			src = args[2]
		}
		keys := [][]byte{src}
		if i := geoRadiusKeys(6)(args); flags&geoByCoords != 0 && len(i) > 1 {
			keys = append(keys, args[i[len(i)-1]])
		} else if i := geoRadiusKeys(5)(args); flags&geoByMember != 0 && len(i) > 1 {
			keys = append(keys, args[i[len(i)-1]])
		} else if flags&geoSearchStore != 0 {
			keys = append(keys, args[1])
		}
		c.atomically(len(keys) > 1, keys, func() { c.geoSearchLocked(args, flags) })
	}
}

func (c *conn) geoSearchLocked(args [][]byte, flags geoFlags) {
	src := args[1]
	if flags&geoSearchStore != 0 {
		src = args[2]
	}
	t := c.keyType(src)
	if t != "none" && t != "zset" {
		c.err(msgWrongType)
		return
	}
	exists := t == "zset"
	centre := func(m []byte) (float64, float64, bool) {
		s, ok := c.geoScores(src, [][]byte{m})
		if !ok || s[0] == nil {
			return 0, 0, false
		}
		lon, lat := store.GeoPoint(*s[0])
		return lon, lat, true
	}
	q, ok := parseGeoQuery(c, args, flags, exists, centre)
	if !ok {
		return
	}
	if !exists {
		if q.storeKey != nil {
			c.storeZSet(q.storeKey, nil)
			return
		}
		c.out.Array(0)
		return
	}
	var rargs [][]byte
	for _, r := range store.GeoCover(q.shape) {
		rargs = append(rargs, kv.FormatFloat(r.Min), kv.FormatFloat(r.Max))
	}
	r := c.execRaw(kv.CmdZScoreRanges, src, rargs...)
	if r.Status != kv.StatusSuccess {
		c.writeReply(r, shapePlain)
		return
	}
	members := make([]string, 0, len(r.Array)/2)
	scores := make([]float64, 0, len(r.Array)/2)
	for i := 0; i+1 < len(r.Array); i += 2 {
		f, _ := strconv.ParseFloat(string(r.Array[i+1].Bulk), 64)
		members = append(members, string(r.Array[i].Bulk))
		scores = append(scores, f)
	}
	limit := 0
	if q.any {
		limit = int(min(q.count, int64(len(members))+1))
	}
	hits := store.GeoFilter(members, scores, q.shape, limit)
	if q.sort != 0 {
		store.GeoSort(hits, q.sort < 0)
	}
	if q.count > 0 && int64(len(hits)) > q.count {
		hits = hits[:q.count]
	}
	if q.storeKey != nil {
		pairs := make([]zpair, len(hits))
		for i, h := range hits {
			pairs[i] = zpair{member: h.Member, score: h.Score}
			if q.storeDist {
				pairs[i].score = h.Dist / q.unit
			}
		}
		c.storeZSet(q.storeKey, pairs)
		return
	}
	opts := 0
	for _, w := range []bool{q.withDist, q.withHash, q.withCoord} {
		if w {
			opts++
		}
	}
	c.out.Array(len(hits))
	for _, h := range hits {
		if opts == 0 {
			c.out.BulkString(h.Member)
			continue
		}
		c.out.Array(1 + opts)
		c.out.BulkString(h.Member)
		if q.withDist {
			c.out.Bulk(distText(h.Dist / q.unit))
		}
		if q.withHash {
			c.out.Int(int64(h.Score))
		}
		if q.withCoord {
			c.out.Array(2)
			c.out.DoubleText(store.GeoCoordText(h.Lon))
			c.out.DoubleText(store.GeoCoordText(h.Lat))
		}
	}
}
