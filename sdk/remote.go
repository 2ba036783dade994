package sdk

import (
	"context"
	"errors"
	"fmt"
)

// ErrRemoteUnsupported: this build has no remote backend yet.
var ErrRemoteUnsupported = errors.New("zaris: remote connections are not available in this build")

func dialRemote(ctx context.Context, cs ConnString, o clientOptions) (backend, error) {
	return nil, fmt.Errorf("%w (%s)", ErrRemoteUnsupported, cs.Endpoints)
}
