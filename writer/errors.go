// Package writer stores buckets and flat documents in MongoDB with atomic,
// idempotent writes, and parks records that cannot be stored.
package writer

import "github.com/fluent-bit-out-mongodb/out_mongodb/errkind"

// PanicError is a panic caught below a flush, with its value and stack.
type PanicError = errkind.PanicError
