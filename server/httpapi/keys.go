package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/metrics"
)

const keysPrefix = "/v1/keys/"

// Response headers of the key API.
const (
	// HeaderRevision carries the per-segment revision of the record (GET) or
	// of the mutation (PUT, DELETE).
	HeaderRevision = "X-Zaris-Revision"
	// HeaderTTL carries the remaining time to live in whole milliseconds,
	// rounded up; absent when the key does not expire.
	HeaderTTL = "X-Zaris-TTL"
)

// keyOf returns the key of a /v1/keys/{key} request. It is taken from the
// escaped path and unescaped exactly once, so a key may contain any byte,
// "/" and "%" included, when the client escapes it.
func keyOf(r *http.Request) (string, error) {
	raw, ok := strings.CutPrefix(r.URL.EscapedPath(), keysPrefix)
	if !ok {
		return "", errors.New("not a key path")
	}
	key, err := url.PathUnescape(raw)
	if err != nil {
		return "", errors.New("key is not a valid escaped path segment")
	}
	if key == "" {
		return "", errors.New("empty key")
	}
	return key, nil
}

// etag renders a version as a strong entity tag.
func etag(version uint64) string { return `"` + strconv.FormatUint(version, 10) + `"` }

// parseVersionTag parses one entity tag naming a version: "3" or 3.
func parseVersionTag(tag string) (uint64, bool) {
	tag = strings.TrimSpace(tag)
	if len(tag) >= 2 && tag[0] == '"' && tag[len(tag)-1] == '"' {
		tag = tag[1 : len(tag)-1]
	}
	v, err := strconv.ParseUint(tag, 10, 64)
	return v, err == nil && v > 0
}

// parseTTL reads ?ttl=: a Go duration ("30s", "1m30s") or whole seconds
// ("30"). Absent or 0 = no expiry.
func parseTTL(q string) (time.Duration, error) {
	if q == "" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(q, 10, 64); err == nil {
		if n < 0 || n > int64(time.Duration(1<<63-1)/time.Second) {
			return 0, errors.New("ttl out of range")
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(q)
	if err != nil {
		return 0, errors.New("ttl is neither a duration (30s) nor whole seconds (30)")
	}
	if d < 0 {
		return 0, errors.New("ttl must not be negative")
	}
	return d, nil
}

// setResultHeaders writes ETag, X-Zaris-Revision and X-Zaris-TTL.
func setResultHeaders(h http.Header, res kv.Result, withETag bool) {
	if withETag {
		h.Set("ETag", etag(res.Version))
	}
	h.Set(HeaderRevision, strconv.FormatUint(res.Revision, 10))
	if res.TTL > 0 {
		ms := (res.TTL + time.Millisecond - 1) / time.Millisecond
		h.Set(HeaderTTL, strconv.FormatInt(int64(ms), 10))
	}
}

// refuse records and answers a request refused before it reached the store.
func (s *Server) refuse(c echo.Context, op metrics.Op, start time.Time, st kv.Status, msg string) error {
	s.rec.Op(op, st, time.Since(start))
	return fail(c, st, msg)
}

// checkRequest refuses what the key API does not understand before any
// work: query parameters other than allowed (a misspelt ?tl=5s must not
// store a key without a TTL) and a key over the store's key cap (414, with
// the limit). It returns the key, or ok false once it has answered.
func (s *Server) checkRequest(c echo.Context, op metrics.Op, start time.Time, allowed ...string) (key string, ok bool, err error) {
	var unknown []string
	for name := range c.Request().URL.Query() {
		if !slices.Contains(allowed, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		msg := "unknown query parameter " + strings.Join(unknown, ", ")
		if len(allowed) > 0 {
			msg += " (this endpoint takes " + strings.Join(allowed, ", ") + ")"
		} else {
			msg += " (this endpoint takes none)"
		}
		return "", false, s.refuse(c, op, start, kv.StatusBadRequest, msg)
	}
	key, kerr := keyOf(c.Request())
	if kerr != nil {
		return "", false, s.refuse(c, op, start, kv.StatusBadRequest, kerr.Error())
	}
	if max := s.store.Config().MaxKeyBytes; len(key) > max {
		s.rec.Op(op, kv.StatusBadRequest, time.Since(start))
		return "", false, failCode(c, http.StatusRequestURITooLong, kv.StatusBadRequest,
			fmt.Sprintf("key of %d bytes exceeds the maximum key size of %d bytes", len(key), max), ptr(int64(max)))
	}
	if s.acl != nil {
		if msg := s.keyPermission(c, op, key); msg != "" {
			s.rec.Op(op, kv.StatusUnauthorized, time.Since(start))
			return "", false, failCode(c, http.StatusForbidden, kv.StatusUnauthorized, msg, nil)
		}
	}
	return key, true, nil
}

func ptr[T any](v T) *T { return &v }

// failResult answers a store result that is not a success: its Detail
// (why, with the limit) when it has one.
func (s *Server) failResult(c echo.Context, res kv.Result) error {
	msg := res.Detail
	if msg == "" {
		msg = unacknowledged(res.Status)
	}
	if res.Status == kv.StatusItemTooLarge {
		return failLimit(c, res.Status, msg, s.maxItem)
	}
	return fail(c, res.Status, msg)
}

// tooLarge answers a PUT body over the item cap.
func (s *Server) tooLarge(c echo.Context, start time.Time, size string) error {
	s.rec.Op(metrics.OpPut, kv.StatusItemTooLarge, time.Since(start))
	return failLimit(c, kv.StatusItemTooLarge,
		fmt.Sprintf("value of %s bytes exceeds --max-item-bytes %d", size, s.maxItem), s.maxItem)
}

// getKey serves GET and HEAD. If-None-Match with the current version (or *)
// answers 304 Not Modified.
func (s *Server) getKey(c echo.Context) error {
	start := time.Now()
	if s.freeze != nil {
		s.freeze(start)
	}
	r := c.Request()
	key, ok, err := s.checkRequest(c, metrics.OpGet, start)
	if !ok {
		return err
	}
	res := s.store.Get(key)
	s.rec.Op(metrics.OpGet, res.Status, time.Since(start))
	if !res.OK() {
		return s.failResult(c, res)
	}
	h := c.Response().Header()
	setResultHeaders(h, res, true)
	if inm := r.Header.Get("If-None-Match"); inm != "" && noneMatchHits(inm, res.Version) {
		return c.NoContent(http.StatusNotModified)
	}
	// The store keeps the content type but its read path returns the value
	// only; the REST API therefore serves values as opaque bytes.
	return c.Blob(http.StatusOK, echo.MIMEOctetStream, res.Value)
}

// noneMatchHits reports whether an If-None-Match list names version (weak
// comparison, RFC 9110 §13.1.2).
func noneMatchHits(header string, version uint64) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" {
			return true
		}
		if v, ok := parseVersionTag(strings.TrimPrefix(tag, "W/")); ok && v == version {
			return true
		}
	}
	return false
}

type putBody struct {
	Version  uint64 `json:"version"`
	Revision uint64 `json:"revision"`
	TTLms    int64  `json:"ttl_ms,omitempty"`
}

// putKey writes the request body under the key: 201 when it creates the
// key, 200 when it replaces it. If-Match: "<version>" makes it a
// compare-and-set, If-None-Match: * makes it create-only; a failed
// condition is 412.
func (s *Server) putKey(c echo.Context) error {
	start := time.Now()
	if s.freeze != nil {
		s.freeze(start)
	}
	r := c.Request()
	key, ok, err := s.checkRequest(c, metrics.OpPut, start, "ttl", "keepttl")
	if !ok {
		return err
	}
	if msg := s.readOnly(); msg != "" {
		return s.refuse(c, metrics.OpPut, start, kv.StatusReadOnly, msg)
	}
	var opts kv.PutOptions
	if opts.TTL, err = parseTTL(c.QueryParam("ttl")); err != nil {
		return s.refuse(c, metrics.OpPut, start, kv.StatusBadRequest, err.Error())
	}
	if q := c.QueryParam("keepttl"); q != "" {
		if opts.KeepTTL, err = strconv.ParseBool(q); err != nil {
			return s.refuse(c, metrics.OpPut, start, kv.StatusBadRequest, "keepttl must be true or false, got "+strconv.Quote(q))
		}
	}
	if im := r.Header.Get("If-Match"); im != "" {
		v, ok := parseVersionTag(im)
		if !ok {
			return s.refuse(c, metrics.OpPut, start, kv.StatusBadRequest,
				`If-Match must be one strong entity tag naming a version, e.g. "3"`)
		}
		opts.IfMatchVersion = v
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if strings.TrimSpace(inm) != "*" {
			return s.refuse(c, metrics.OpPut, start, kv.StatusBadRequest,
				"If-None-Match on PUT supports only * (create only)")
		}
		opts.IfAbsent = true
	}
	opts.ContentType = r.Header.Get(echo.HeaderContentType)

	if r.ContentLength > s.maxItem {
		return s.tooLarge(c, start, strconv.FormatInt(r.ContentLength, 10))
	}
	value, err := readBody(c, s.maxItem+BodySlack)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return s.tooLarge(c, start, "more than "+strconv.FormatInt(s.maxItem+BodySlack, 10))
		}
		return s.refuse(c, metrics.OpPut, start, kv.StatusBadRequest, "reading the body: "+err.Error())
	}

	opStart := time.Now()
	res := s.store.Put(key, value, &opts)
	res.Status = s.acknowledge(c, key, res)
	s.rec.Op(metrics.OpPut, res.Status, time.Since(opStart))
	if !res.OK() {
		return s.failResult(c, res)
	}
	setResultHeaders(c.Response().Header(), res, true)
	code := http.StatusOK
	if res.Version == 1 {
		code = http.StatusCreated
	}
	body := putBody{Version: res.Version, Revision: res.Revision}
	if res.TTL > 0 {
		body.TTLms = int64((res.TTL + time.Millisecond - 1) / time.Millisecond)
	}
	return c.JSON(code, body)
}

// readBody reads the request body, at most limit bytes. A body with a
// Content-Length is read into a buffer of exactly that size.
func readBody(c echo.Context, limit int64) ([]byte, error) {
	r := c.Request()
	body := http.MaxBytesReader(c.Response(), r.Body, limit)
	defer body.Close()
	if n := r.ContentLength; n >= 0 && n <= limit {
		buf := make([]byte, n)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(body)
}

// deleteKey removes the key: 204, or 404 when it is absent.
func (s *Server) deleteKey(c echo.Context) error {
	start := time.Now()
	if s.freeze != nil {
		s.freeze(start)
	}
	r := c.Request()
	key, ok, err := s.checkRequest(c, metrics.OpDelete, start)
	if !ok {
		return err
	}
	if msg := s.readOnly(); msg != "" {
		return s.refuse(c, metrics.OpDelete, start, kv.StatusReadOnly, msg)
	}
	if r.Header.Get("If-Match") != "" {
		// The store's delete is unconditional; ignoring the precondition
		// would delete a value the client meant to keep.
		return s.refuse(c, metrics.OpDelete, start, kv.StatusBadRequest, "conditional DELETE (If-Match) is not supported")
	}
	res := s.store.Delete(key)
	res.Status = s.acknowledge(c, key, res)
	s.rec.Op(metrics.OpDelete, res.Status, time.Since(start))
	if !res.OK() {
		return s.failResult(c, res)
	}
	setResultHeaders(c.Response().Header(), res, false)
	return c.NoContent(http.StatusNoContent)
}

// acknowledge runs the write barrier after a successful write (sync
// replication) and returns the status to answer.
func (s *Server) acknowledge(c echo.Context, key string, res kv.Result) kv.Status {
	if s.barrier == nil || !res.OK() {
		return res.Status
	}
	return s.barrier(c.Request().Context(), s.store.SegmentFor(key).ID(), res.Revision)
}

func unacknowledged(st kv.Status) string {
	if st == kv.StatusTimeout {
		return "not acknowledged by the replicas in time; the write is applied on the owner"
	}
	return ""
}
