package store

import (
	"cmp"
	"slices"
)

// Geo search over candidates read from a geo set's cells (GeoCover): the
// filter and order of GEOSEARCH, GEORADIUS and their STORE forms.

// GeoHit is one member found by a search.
type GeoHit struct {
	Member   string
	Score    float64 // the stored geohash
	Dist     float64 // metres from the search centre
	Lon, Lat float64 // the member's decoded position
}

// GeoFilter keeps the candidates (member, score pairs in the order read)
// whose decoded position is inside s, in that order; with limit > 0 it
// stops once limit were found (COUNT … ANY).
func GeoFilter(members []string, scores []float64, s GeoShape, limit int) []GeoHit {
	var out []GeoHit
	for i, m := range members {
		if limit > 0 && len(out) >= limit {
			break
		}
		lon, lat := GeoPoint(scores[i])
		d, ok := s.Contains(lon, lat)
		if !ok {
			continue
		}
		out = append(out, GeoHit{Member: m, Score: scores[i], Dist: d, Lon: lon, Lat: lat})
	}
	return out
}

// GeoSort orders hits by distance (desc: farthest first), keeping the
// order found between equal distances.
func GeoSort(hits []GeoHit, desc bool) {
	slices.SortStableFunc(hits, func(a, b GeoHit) int {
		if desc {
			return cmp.Compare(b.Dist, a.Dist)
		}
		return cmp.Compare(a.Dist, b.Dist)
	})
}
