package simdiff

import (
	"fmt"
	"testing"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sim/server"
)

// The generated sequences meet every shape the replay is meant to check,
// on the model alone (no server needed).
func TestGeneratedShapes(t *testing.T) {
	seen := map[string]int{}
	for seed := range uint64(seeds) {
		m := server.New()
		for _, op := range generate(seed+1, opsPerSeq) {
			rep := m.Apply(op)
			switch op.Kind {
			case server.Upserts:
				kinds := map[errkind.Kind]bool{}
				for _, err := range rep.Errs {
					kinds[errkind.Of(err)] = true
					seen["upsert "+errkind.Of(err).String()]++
				}
				if len(op.Ups) > 1 && kinds[errkind.None] && kinds[errkind.Duplicate] {
					seen["batch of applied and colliding statements"]++
				}
			case server.Find:
				shape := "unsorted"
				if op.Query.Sort != nil {
					shape = "sorted"
				}
				if op.Query.Limit > 0 {
					shape += " limited"
				}
				if len(rep.Docs) > 0 {
					seen["find "+shape+" found"]++
				}
				if _, err := op.Filter.LookupErr("$or"); err == nil && len(rep.Docs) > 0 {
					seen["find $or found"]++
				}
				for _, d := range rep.Docs {
					if _, err := d.LookupErr("parked"); err == nil {
						seen["find a record parked"]++
					}
				}
			case server.InsertMany, server.Replace:
				seen[fmt.Sprintf("%s %s", op.Kind, errkind.Of(rep.Err))]++
			case server.Delete:
				if rep.N > 0 {
					seen["delete deleted"]++
				}
			default:
				seen[op.Kind.String()]++
			}
		}
	}
	for _, want := range []string{"upsert none", "upsert duplicate key", "batch of applied and colliding statements",
		"find unsorted found", "find sorted limited found", "find unsorted limited found", "find $or found",
		"insertMany none", "insertMany duplicate key", "replace none", "replace duplicate key", "delete deleted", "drop", "ping", "updateMany",
		"find a record parked"} {
		if seen[want] == 0 {
			t.Errorf("no %q in %d sequences: %v", want, seeds, seen)
		}
	}
}
