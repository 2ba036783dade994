package native

import "syscall"

// errTooManyFiles is a transient accept error: back off instead of failing.
var errTooManyFiles = syscall.EMFILE
