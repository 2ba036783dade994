package store

import (
	"math"
	"strconv"
)

// Geohash (the GEO commands, issue #13 item 5). A geo set is a sorted set
// whose scores are 52-bit geohashes, as in Redis: the longitude and the
// latitude each quantised to 26 bits over their range, interleaved with
// the longitude in the odd (more significant) bit of every pair. Redis's
// latitude range is Web Mercator's (±85.05112878°), so a stored point
// decodes to the centre of its cell exactly as redis-server decodes it,
// and a search covers the same cells in the same order.

const (
	GeoLonMin = -180.0
	GeoLonMax = 180.0
	GeoLatMin = -85.05112878
	GeoLatMax = 85.05112878

	geoStepMax = 26 // bits per coordinate in a stored score
	// earthRadius is the sphere Redis measures distances on (metres).
	earthRadius = 6372797.560856
	mercatorMax = 20037726.37
)

// GeoHash is a geohash of step bits per coordinate.
type GeoHash struct {
	Bits uint64
	Step uint
}

type geoRange struct{ min, max float64 }

var (
	geoLonRange = geoRange{GeoLonMin, GeoLonMax}
	geoLatRange = geoRange{GeoLatMin, GeoLatMax}
)

// GeoValid reports whether lon, lat can be indexed.
func GeoValid(lon, lat float64) bool {
	return lon >= GeoLonMin && lon <= GeoLonMax && lat >= GeoLatMin && lat <= GeoLatMax
}

// spread moves the low 32 bits of v to the even bit positions.
func spread(v uint64) uint64 {
	v &= 0xffffffff
	v = (v | v<<16) & 0x0000ffff0000ffff
	v = (v | v<<8) & 0x00ff00ff00ff00ff
	v = (v | v<<4) & 0x0f0f0f0f0f0f0f0f
	v = (v | v<<2) & 0x3333333333333333
	v = (v | v<<1) & 0x5555555555555555
	return v
}

// squash is spread's inverse: the even bits of v, packed.
func squash(v uint64) uint64 {
	v &= 0x5555555555555555
	v = (v | v>>1) & 0x3333333333333333
	v = (v | v>>2) & 0x0f0f0f0f0f0f0f0f
	v = (v | v>>4) & 0x00ff00ff00ff00ff
	v = (v | v>>8) & 0x0000ffff0000ffff
	v = (v | v>>16) & 0x00000000ffffffff
	return v
}

func interleave(lat, lon uint64) uint64 { return spread(lat) | spread(lon)<<1 }

func split(bits uint64) (lat, lon uint64) { return squash(bits), squash(bits >> 1) }

func geoEncode(lonR, latR geoRange, lon, lat float64, step uint) (GeoHash, bool) {
	if !GeoValid(lon, lat) || lat < latR.min || lat > latR.max || lon < lonR.min || lon > lonR.max {
		return GeoHash{}, false
	}
	latOff := (lat - latR.min) / (latR.max - latR.min)
	lonOff := (lon - lonR.min) / (lonR.max - lonR.min)
	cells := float64(uint64(1) << step)
	return GeoHash{Bits: interleave(uint64(uint32(latOff*cells)), uint64(uint32(lonOff*cells))), Step: step}, true
}

// geoArea is the cell a hash names.
type geoArea struct{ lon, lat geoRange }

func geoDecode(lonR, latR geoRange, h GeoHash) geoArea {
	ilat, ilon := split(h.Bits)
	cells := float64(uint64(1) << h.Step)
	latScale, lonScale := latR.max-latR.min, lonR.max-lonR.min
	// float64(…) around each product keeps the compiler from fusing it
	// into the sum: the cell bounds must round as redis-server's do.
	return geoArea{
		lat: geoRange{latR.min + float64(float64(ilat)/cells*latScale), latR.min + float64(float64(ilat+1)/cells*latScale)},
		lon: geoRange{lonR.min + float64(float64(ilon)/cells*lonScale), lonR.min + float64(float64(ilon+1)/cells*lonScale)},
	}
}

func (a geoArea) centre() (lon, lat float64) {
	lon = min(max((a.lon.min+a.lon.max)/2, GeoLonMin), GeoLonMax)
	lat = min(max((a.lat.min+a.lat.max)/2, GeoLatMin), GeoLatMax)
	return lon, lat
}

// GeoScore is the sorted-set score of a point (its 52-bit geohash); false
// when the point is outside the indexable range.
func GeoScore(lon, lat float64) (float64, bool) {
	h, ok := geoEncode(geoLonRange, geoLatRange, lon, lat, geoStepMax)
	return float64(h.Bits), ok
}

// GeoPoint decodes a score to the point it stands for: its cell's centre.
func GeoPoint(score float64) (lon, lat float64) {
	return geoDecode(geoLonRange, geoLatRange, GeoHash{Bits: scoreBits(score), Step: geoStepMax}).centre()
}

// scoreBits converts a score to geohash bits as redis-server's
// (uint64_t)score does on x86-64 (cvttsd2si; at or above 2^63 the value
// less 2^63, the top bit flipped back), so a score no GEOADD wrote (ZADD
// k inf m, 1e308) decodes to the point Redis shows: at or above 2^64 it
// is 0, below -2^63 it is 2^63. Go leaves such conversions to the
// platform.
func scoreBits(score float64) uint64 {
	const two63 = 1 << 63
	cvtt := func(f float64) uint64 { // cvttsd2si: out of range or NaN is 0x8000000000000000
		if !(f >= -two63 && f < two63) {
			return 1 << 63
		}
		return uint64(int64(f))
	}
	if score >= two63 {
		return cvtt(score-two63) ^ 1<<63
	}
	return cvtt(score)
}

const geoAlphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

// GeoHashString is GEOHASH's 11-character string for a stored score: the
// point re-encoded over the standard ±90° latitude range (what other
// geohash tools use), the last character padding.
func GeoHashString(score float64) []byte {
	lon, lat := GeoPoint(score)
	h, _ := geoEncode(geoLonRange, geoRange{-90, 90}, lon, lat, geoStepMax)
	out := make([]byte, 11)
	for i := range out {
		idx := uint64(0)
		if i < 10 {
			idx = (h.Bits >> (52 - uint(i+1)*5)) & 0x1f
		}
		out[i] = geoAlphabet[idx]
	}
	return out
}

// degToRad is π/180 rounded as a C compiler computes M_PI / 180.0: π
// rounded to a double first (Go would fold the exact quotient).
var degToRad = float64(math.Pi) / 180.0

func degRad(d float64) float64 { return d * degToRad }
func radDeg(r float64) float64 { return r / degToRad }

// geoLatDistance is the distance along a meridian between two latitudes.
func geoLatDistance(lat1, lat2 float64) float64 {
	return earthRadius * math.Abs(degRad(lat2)-degRad(lat1))
}

// GeoDistance is the haversine distance in metres, as redis-server
// computes it.
func GeoDistance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r, lon2r := degRad(lon1), degRad(lon2)
	v := crSin((lon2r - lon1r) / 2)
	if v == 0 {
		return geoLatDistance(lat1, lat2)
	}
	lat1r, lat2r := degRad(lat1), degRad(lat2)
	u := crSin((lat2r - lat1r) / 2)
	a := u*u + crCos(lat1r)*crCos(lat2r)*v*v
	return 2.0 * earthRadius * crAsin(math.Sqrt(a))
}

// GeoShape is a search area: a circle (Radius > 0 or a box's Width and
// Height zero) or a box, in metres, around Lon, Lat.
type GeoShape struct {
	Lon, Lat      float64
	Box           bool
	Radius        float64 // metres
	Width, Height float64 // metres
}

// Contains reports whether the point is in the shape and its distance from
// the centre (metres), with redis-server's arithmetic.
func (s GeoShape) Contains(lon, lat float64) (float64, bool) {
	if !s.Box {
		d := GeoDistance(s.Lon, s.Lat, lon, lat)
		return d, d <= s.Radius
	}
	if geoLatDistance(lat, s.Lat) > s.Height/2 {
		return 0, false
	}
	if GeoDistance(lon, lat, s.Lon, lat) > s.Width/2 {
		return 0, false
	}
	return GeoDistance(s.Lon, s.Lat, lon, lat), true
}

// bounds is the shape's bounding box: min lon, min lat, max lon, max lat.
func (s GeoShape) bounds() (minLon, minLat, maxLon, maxLat float64) {
	height, width := s.Radius, s.Radius
	if s.Box {
		height, width = s.Height/2, s.Width/2
	}
	latDelta := radDeg(height / earthRadius)
	lonDeltaTop := radDeg(width / earthRadius / crCos(degRad(s.Lat+latDelta)))
	lonDeltaBottom := radDeg(width / earthRadius / crCos(degRad(s.Lat-latDelta)))
	// Towards the pole a parallel is shorter: the box is widest on the
	// side nearer the pole.
	if s.Lat < 0 {
		return s.Lon - lonDeltaBottom, s.Lat - latDelta, s.Lon + lonDeltaBottom, s.Lat + latDelta
	}
	return s.Lon - lonDeltaTop, s.Lat - latDelta, s.Lon + lonDeltaTop, s.Lat + latDelta
}

// geoSteps is the cell size (bits per coordinate) whose cells are about as
// large as the search radius, one step coarser near the poles.
func geoSteps(rangeMeters, lat float64) uint {
	if rangeMeters == 0 {
		return geoStepMax
	}
	step := 1
	for rangeMeters < mercatorMax {
		rangeMeters *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint(min(max(step, 1), geoStepMax))
}

// move shifts a hash by dx cells east and dy cells north, wrapping around
// its grid.
func (h GeoHash) move(dx, dy int) GeoHash {
	lat, lon := split(h.Bits)
	mask := uint64(1)<<h.Step - 1
	lat = (lat + uint64(int64(dy))) & mask
	lon = (lon + uint64(int64(dx))) & mask
	return GeoHash{Bits: interleave(lat, lon), Step: h.Step}
}

// GeoScoreRange is a half-open range of scores [Min, Max): one geohash
// cell, at 52-bit resolution.
type GeoScoreRange struct{ Min, Max float64 }

// GeoCover returns the score ranges a search of s reads: the cell holding
// the centre and its eight neighbours (centre, N, S, E, W, NE, NW, SE, SW —
// the order redis-server reads them, so unsorted results come out in its
// order), the cell size chosen so they cover the shape, neighbours wholly
// outside the shape's bounding box left out, and a range equal to the one
// before it skipped.
func GeoCover(s GeoShape) []GeoScoreRange {
	minLon, minLat, maxLon, maxLat := s.bounds()
	radius := s.Radius
	if s.Box {
		radius = math.Sqrt(s.Width/2*s.Width/2 + s.Height/2*s.Height/2)
	}
	steps := geoSteps(radius, s.Lat)
	centre, _ := geoEncode(geoLonRange, geoLatRange, s.Lon, s.Lat, steps)
	cells := func(c GeoHash) [9]GeoHash {
		return [9]GeoHash{c, c.move(0, 1), c.move(0, -1), c.move(1, 0), c.move(-1, 0),
			c.move(1, 1), c.move(-1, 1), c.move(1, -1), c.move(-1, -1)}
	}
	n := cells(centre)
	// Near an edge of the grid the estimated cells may be too small for
	// the neighbours to reach the box's sides: one step coarser then.
	north, south := geoDecode(geoLonRange, geoLatRange, n[1]), geoDecode(geoLonRange, geoLatRange, n[2])
	east, west := geoDecode(geoLonRange, geoLatRange, n[3]), geoDecode(geoLonRange, geoLatRange, n[4])
	if steps > 1 && (north.lat.max < maxLat || south.lat.min > minLat || east.lon.max < maxLon || west.lon.min > minLon) {
		steps--
		centre, _ = geoEncode(geoLonRange, geoLatRange, s.Lon, s.Lat, steps)
		n = cells(centre)
	}
	var skip [9]bool
	if steps >= 2 {
		area := geoDecode(geoLonRange, geoLatRange, centre)
		if area.lat.min < minLat {
			skip[2], skip[8], skip[7] = true, true, true // south, south-west, south-east
		}
		if area.lat.max > maxLat {
			skip[1], skip[5], skip[6] = true, true, true // north, north-east, north-west
		}
		if area.lon.min < minLon {
			skip[4], skip[8], skip[6] = true, true, true // west, south-west, north-west
		}
		if area.lon.max > maxLon {
			skip[3], skip[7], skip[5] = true, true, true // east, south-east, north-east
		}
	}
	var out []GeoScoreRange
	last := -1
	for i, c := range n {
		if skip[i] || last >= 0 && c == n[last] {
			continue
		}
		shift := 52 - 2*c.Step
		out = append(out, GeoScoreRange{Min: float64(c.Bits << shift), Max: float64((c.Bits + 1) << shift)})
		last = i
	}
	return out
}

// GeoCoordText formats a coordinate as GEOPOS prints it: 17 decimals of
// the double's exact value, trailing zeros dropped.
func GeoCoordText(f float64) []byte {
	b := strconv.AppendFloat(nil, f, 'f', 17, 64)
	for len(b) > 0 && b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	if len(b) > 0 && b[len(b)-1] == '.' {
		b = b[:len(b)-1]
	}
	if string(b) == "-0" {
		return []byte("0")
	}
	return b
}
