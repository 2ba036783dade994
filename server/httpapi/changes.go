package httpapi

// GET /v1/changes: the change feed (R-OPS-4) as Server-Sent Events, for
// consumers in any language. Each change is one event:
//
//	id: <cursor after this change>
//	event: change
//	data: {"kind":"put","key":"k","value":"<base64>","segment":12,"epoch":3,"revision":41,"version":2,...}
//
// The id is the cursor to resume from (a client's Last-Event-ID header,
// or ?cursor=, resumes exactly after that change). ?prefix= limits the
// keys; ?snapshot=true (without a cursor) first sends the live records as
// "record" events, then "snapshot-done". A cursor whose history is gone
// ends the stream with an "expired" event (RFC 9457-shaped data naming the
// segment) — unless ?resync=true, which sends a "resync" event with that
// segment's live records and carries on (the snapshot-then-feed path).
// Comments (": keep-alive") are sent when the feed is idle.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/sdk"
)

// changeKeepAlive is how often an idle feed sends a comment, so proxies
// and clients see the connection alive.
const changeKeepAlive = 15 * time.Second

// ChangeJSON is the data of one SSE change event.
type ChangeJSON struct {
	Kind      string       `json:"kind"`
	Key       string       `json:"key,omitempty"`
	Value     []byte       `json:"value,omitempty"`
	Segment   uint16       `json:"segment"`
	Epoch     uint64       `json:"epoch"`
	Revision  uint64       `json:"revision"`
	Version   uint64       `json:"version,omitempty"`
	ExpiresAt int64        `json:"expiresAt,omitempty"` // Unix ms
	Command   string       `json:"command,omitempty"`
	Records   []RecordJSON `json:"records,omitempty"`
}

// RecordJSON is one live record of a snapshot or a resync.
type RecordJSON struct {
	Key       string `json:"key"`
	Value     []byte `json:"value,omitempty"`
	Revision  uint64 `json:"revision"`
	Version   uint64 `json:"version"`
	ExpiresAt int64  `json:"expiresAt,omitempty"`
}

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func recordsJSON(rs []sdk.WatchRecord) []RecordJSON {
	out := make([]RecordJSON, 0, len(rs))
	for _, r := range rs {
		out = append(out, RecordJSON{Key: r.Key, Value: r.Value, Revision: r.Revision, Version: r.Version, ExpiresAt: unixMs(r.ExpiresAt)})
	}
	return out
}

func (s *Server) getChanges(c echo.Context) error {
	if s.changes == nil {
		return fail(c, kv.StatusNotFound, "the change feed is not served by this node")
	}
	q := c.Request().URL.Query()
	opts := &sdk.ChangesOptions{Prefix: q.Get("prefix")}
	raw := q.Get("cursor")
	if raw == "" {
		raw = c.Request().Header.Get("Last-Event-ID")
	}
	if raw != "" {
		cur, err := sdk.ParseCursor(raw)
		if err != nil {
			return fail(c, kv.StatusBadRequest, err.Error())
		}
		opts.Cursor = cur
	}
	for name, dst := range map[string]*bool{"snapshot": &opts.Snapshot, "resync": &opts.ResyncOnExpired} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fail(c, kv.StatusBadRequest, fmt.Sprintf("%s=%q: want true or false", name, v))
			}
			*dst = b
		}
	}
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	defer context.AfterFunc(s.streams, cancel)()
	feed, err := s.changes(ctx, opts)
	switch {
	case errors.Is(err, sdk.ErrCursorExpired):
		return fail(c, kv.StatusNotFound, err.Error()) // 410 would be truer; see the expired event below
	case errors.Is(err, sdk.ErrBadRequest):
		return fail(c, kv.StatusBadRequest, err.Error())
	case err != nil:
		return fail(c, kv.StatusUnavailable, err.Error())
	}
	defer feed.Close()
	// The feed outlives the server's write timeout: lift it for this response.
	rc := http.NewResponseController(c.Response().Writer)
	_ = rc.SetWriteDeadline(time.Time{})
	h := c.Response().Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	c.Response().WriteHeader(http.StatusOK)
	w := c.Response()
	send := func(id, event string, data any) error {
		b, err := json.Marshal(data)
		if err != nil {
			return err
		}
		if id != "" {
			fmt.Fprintf(w, "id: %s\n", id)
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		return rc.Flush()
	}
	if opts.Snapshot {
		for _, r := range recordsJSON(feed.Snapshot()) {
			if err := send("", "record", r); err != nil {
				return nil
			}
		}
		if err := send(feed.Cursor().String(), "snapshot-done", struct{}{}); err != nil {
			return nil
		}
	} else if err := send(feed.Cursor().String(), "ready", struct{}{}); err != nil {
		return nil
	}
	for {
		nctx, cancel := context.WithTimeout(ctx, changeKeepAlive)
		ch, err := feed.Next(nctx)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			fmt.Fprint(w, ": keep-alive\n\n")
			if rc.Flush() != nil {
				return nil
			}
			continue
		case errors.Is(err, sdk.ErrCursorExpired):
			var ce *sdk.CursorExpiredError
			seg := -1
			if errors.As(err, &ce) {
				seg = int(ce.Segment)
			}
			_ = send("", "expired", map[string]any{"type": "about:blank", "title": "CursorExpired",
				"status": http.StatusGone, "detail": err.Error(), "segment": seg})
			return nil
		default:
			if ctx.Err() == nil {
				_ = send("", "error", map[string]any{"title": "FeedEnded", "detail": err.Error()})
			}
			return nil
		}
		data := ChangeJSON{Kind: ch.Kind.String(), Key: ch.Key, Value: ch.Value, Segment: ch.Segment, Epoch: ch.Epoch,
			Revision: ch.Revision, Version: ch.Version, ExpiresAt: unixMs(ch.ExpiresAt)}
		event := "change"
		if ch.Kind == sdk.WatchCommand {
			data.Command = ch.Command.String()
		}
		if ch.Kind == sdk.WatchResync {
			event, data.Key, data.Records = "resync", "", recordsJSON(ch.Records)
		}
		if err := send(feed.Cursor().String(), event, data); err != nil {
			return nil
		}
	}
}
