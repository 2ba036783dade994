package acl

import "time"

var timeZero = time.Unix(1_700_000_000, 0)

const timeMillisecond = time.Millisecond
