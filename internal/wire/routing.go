package wire

// RoutingMap is the client's view of a cluster's partition map (R-CLIENT-2):
// just enough to send every key straight to its owner.
//
//	[Version uint, TotalSegments uint,
//	 Nodes array of [ID str, Host str, ClientPort uint, RESPPort uint],
//	 SegmentOwner array of int (index into Nodes, -1 = unowned)]
type RoutingMap struct {
	Version       uint64
	TotalSegments int
	Nodes         []RoutingNode
	SegmentOwner  []int32
}

// RoutingNode is one member as a client reaches it.
type RoutingNode struct {
	ID         string
	Host       string
	ClientPort int
	RESPPort   int
}

// MaxRoutingSegments bounds a decoded map (the placement's slot count).
const MaxRoutingSegments = 16384

func AppendRoutingMap(dst []byte, m *RoutingMap) []byte {
	dst = appendArrayHeader(dst, 4)
	dst = appendUint(dst, m.Version)
	dst = appendUint(dst, uint64(m.TotalSegments))
	dst = appendArrayHeader(dst, len(m.Nodes))
	for _, n := range m.Nodes {
		dst = appendArrayHeader(dst, 4)
		dst = appendStr(dst, n.ID)
		dst = appendStr(dst, n.Host)
		dst = appendUint(dst, uint64(n.ClientPort))
		dst = appendUint(dst, uint64(n.RESPPort))
	}
	dst = appendArrayHeader(dst, len(m.SegmentOwner))
	for _, o := range m.SegmentOwner {
		dst = appendInt(dst, int64(o))
	}
	return dst
}

// DecodeRoutingMap decodes and checks a routing map: every owner index must
// name a node, and the segment table must be complete.
func DecodeRoutingMap(body []byte, m *RoutingMap) error {
	d := decoder{b: body, body: "routing map"}
	n, err := d.beginStruct(4)
	if err != nil {
		return err
	}
	*m = RoutingMap{}
	d.field = "version"
	if m.Version, err = d.readUint(^uint64(0)); err != nil {
		return err
	}
	d.field = "segments"
	segs, err := d.readUint(MaxRoutingSegments)
	if err != nil {
		return err
	}
	m.TotalSegments = int(segs)
	d.field = "nodes"
	nn, err := d.readArrayHeader()
	if err != nil {
		return err
	}
	if nn > d.remaining() {
		return d.truncated(nn)
	}
	for range nn {
		fields, err := d.beginStruct(4)
		if err != nil {
			return err
		}
		var rn RoutingNode
		d.field = "node id"
		if rn.ID, err = d.readString(); err != nil {
			return err
		}
		d.field = "node host"
		if rn.Host, err = d.readString(); err != nil {
			return err
		}
		d.field = "node client port"
		p, err := d.readUint(65535)
		if err != nil {
			return err
		}
		rn.ClientPort = int(p)
		d.field = "node resp port"
		if p, err = d.readUint(65535); err != nil {
			return err
		}
		rn.RESPPort = int(p)
		if err := d.endStruct(fields, 4); err != nil {
			return err
		}
		m.Nodes = append(m.Nodes, rn)
	}
	d.field = "segment owners"
	ns, err := d.readArrayHeader()
	if err != nil {
		return err
	}
	if ns != m.TotalSegments {
		return d.fail("%d segment owners for %d segments", ns, m.TotalSegments)
	}
	m.SegmentOwner = make([]int32, 0, ns)
	for range ns {
		o, err := d.readInt()
		if err != nil {
			return err
		}
		if o < -1 || o >= int64(len(m.Nodes)) {
			return d.fail("segment owner %d out of range", o)
		}
		m.SegmentOwner = append(m.SegmentOwner, int32(o))
	}
	if err := d.endStruct(n, 4); err != nil {
		return err
	}
	return d.finish()
}
