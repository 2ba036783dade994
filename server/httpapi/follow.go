package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/zaris-io/zaris/internal/kv"
)

// The WAN follower's admin endpoints (R-OPS-4), behind zarisctl follow and
// zarisctl promote; like the other admin routes they need every @admin
// command when the node has users.
//
//	POST /v1/cluster/follow?source=zaris://PRIMARY_SEEDS/STORE
//	     start following the primary's change feed: writes are refused from
//	     then on (200 with the follow state; 409 while another primary is
//	     followed, 400 for a source that is no connection string)
//	POST /v1/cluster/promote
//	     stop following for good and open writes (200 with the state; a
//	     cluster that follows nothing answers 200 too)

// FollowControl starts and stops following; each returns the document
// answered (the follow state).
type FollowControl interface {
	Follow(ctx context.Context, source string) (any, error)
	Promote(ctx context.Context) (any, error)
}

// ErrBadSource is wrapped by a Follow error for a source that is not a
// remote connection string (400).
var ErrBadSource = errors.New("bad follow source")

// ErrFollowConflict is wrapped by a Follow error while the cluster follows
// another source (409).
var ErrFollowConflict = errors.New("already following another cluster")

func (s *Server) startFollow(c echo.Context) error {
	if s.follow == nil {
		return fail(c, kv.StatusNotFound, "no cluster")
	}
	for name := range c.QueryParams() {
		if name != "source" {
			return fail(c, kv.StatusBadRequest, "unknown query parameter "+name+" (allowed: source)")
		}
	}
	src := c.QueryParam("source")
	if src == "" {
		return fail(c, kv.StatusBadRequest, "missing ?source=zaris://PRIMARY_SEEDS/STORE")
	}
	doc, err := s.follow.Follow(c.Request().Context(), src)
	switch {
	case errors.Is(err, ErrBadSource):
		return fail(c, kv.StatusBadRequest, err.Error())
	case errors.Is(err, ErrFollowConflict):
		return failCode(c, http.StatusConflict, kv.StatusConflict, err.Error(), nil)
	case err != nil:
		return fail(c, kv.StatusUnavailable, err.Error())
	}
	return c.JSON(http.StatusOK, doc)
}

func (s *Server) promote(c echo.Context) error {
	if s.follow == nil {
		return fail(c, kv.StatusNotFound, "no cluster")
	}
	if len(c.QueryParams()) > 0 {
		return fail(c, kv.StatusBadRequest, "POST /v1/cluster/promote takes no query parameter")
	}
	doc, err := s.follow.Promote(c.Request().Context())
	if err != nil {
		return fail(c, kv.StatusUnavailable, err.Error())
	}
	return c.JSON(http.StatusOK, doc)
}

// readOnly is Options.ReadOnly's answer ("" = writes open).
func (s *Server) readOnly() string {
	if s.ro == nil {
		return ""
	}
	return s.ro()
}
