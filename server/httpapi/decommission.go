package httpapi

import (
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/zaris-io/zaris/internal/kv"
)

// POST /v1/node/decommission takes the node that receives it out of the
// cluster for good (zarisctl drain): it answers 202 at once, then the node
// announces its leave (the leader drops it from the map without a grace
// window) and stops, this HTTP service included — which is why the work
// cannot run inside the handler: the stop waits for in-flight requests.

type decommissionBody struct {
	Status string `json:"status"` // "decommissioning"
}

// decommissionHandler serves POST /v1/node/decommission over start, the
// node's Options.Decommission. start runs once per server whatever the
// number of requests; a repeated request answers 202 again.
func decommissionHandler(start func()) echo.HandlerFunc {
	var once sync.Once
	return func(c echo.Context) error {
		if start == nil {
			return fail(c, kv.StatusNotFound, "no cluster")
		}
		once.Do(start)
		return c.JSON(http.StatusAccepted, decommissionBody{Status: "decommissioning"})
	}
}
