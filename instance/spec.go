package instance

import (
	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
)

// Spec is how an instance of cfg creates and keeps collection coll (a
// collection or partition of cfg, or its dead-letter collection): the
// indexes and TTL index it makes there, which mongolog doctor compares a
// collection with.
func Spec(cfg *conf.Config, coll string) layout.Spec {
	return spec(cfg, coll == cfg.DeadLetterCollection)
}
