package sink

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/naming"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// Targets name each record's collection and dead-letter collection from
// templates of its tag and fields (see package naming).
type Targets struct {
	Target     naming.Pair      // the database and collection templates
	DeadLetter *naming.Template // the dead-letter collection's, in the record's database
	// Qualified: names are "<database>.<collection>" (the database is a
	// template; see writer.SplitNamespace); else collections of the
	// store's database.
	Qualified bool
	// Limit bounds the distinct targets (see naming.Set); a record whose
	// target would be a new one beyond it goes to the overflow target:
	// its record placeholders replaced by Overflow. Overflow targets are
	// bounded by Limit too, apart; beyond, a record goes to the overflow
	// target whose tag is Overflow as well, which is always admitted.
	Limit    int
	Overflow string
	// Existing, when set, lists the targets that exist already, each as
	// Target resolves it (database, collection without a partition
	// suffix). They are opened before the first chunk is routed: they
	// count towards Limit and are always admitted, so that a restart or a
	// reload neither opens Limit more targets nor sends a record of a
	// resent chunk to its own target where the process before sent it to
	// an overflow target.
	Existing func(ctx context.Context) ([][2]string, error)
}

// overflowWarnEvery is how often the records sent to an overflow target
// are reported.
const overflowWarnEvery = time.Minute

// maxWhere bounds the overflow targets a warning names.
const maxWhere = 3

// router resolves targets. It is safe for concurrent use.
type router struct {
	t        *Targets
	set      *naming.Set // the records' own targets
	overflow *naming.Set // the overflow targets

	mu       sync.Mutex
	over     int64    // records sent to an overflow target since the last warning
	where    []string // some of the overflow targets they went to (maxWhere)
	lastWarn time.Time
	reserved reservedReport // records whose own database is reserved

	openMu sync.Mutex  // held while Existing runs
	opened atomic.Bool // the existing targets are open (or cannot be listed)
}

func newRouter(t *Targets) *router {
	if t == nil {
		return nil
	}
	return &router{t: t, set: naming.NewSet(t.Limit), overflow: naming.NewSet(t.Limit)}
}

// openExisting opens the targets that exist already, once. An error that
// passes (no answer in time, an election) is returned: the chunk waits,
// and the next flush lists them again. A refusal (say, a user not allowed
// to list collections) is warned of, and routing goes on with the targets
// this process opens.
func (rt *router) openExisting(ctx context.Context, log Logger) error {
	if rt.t.Existing == nil || rt.opened.Load() {
		return nil
	}
	rt.openMu.Lock()
	defer rt.openMu.Unlock()
	if rt.opened.Load() {
		return nil
	}
	pairs, err := rt.t.Existing(ctx)
	switch {
	case err == nil:
		// Existing overflow targets count towards their own bound too:
		// those whose record placeholders read target_overflow.
		rt.set.Open(pairs)
		var over [][2]string
		for _, p := range pairs {
			if rt.t.Target.MatchesOverflow(p[0], p[1], rt.t.Overflow) {
				over = append(over, p)
			}
		}
		rt.overflow.Open(over)
		log.Infof("%d targets exist already: open from the start, counted towards target_limit %d", len(pairs), rt.t.Limit)
	case errkind.Of(err).Passing():
		return fmt.Errorf("listing the targets that exist already: %w", err)
	default:
		log.Warnf("listing the targets that exist already: %v (going on without them: target_limit counts only the targets this process opens)", err)
	}
	rt.opened.Store(true)
	return nil
}

// dest is where one record goes.
type dest struct {
	coll string // its collection (qualified when the database is a template)
	// over: 0, or 1 for a record sent to the overflow target, 2 for one
	// sent to the overflow target whose tag is replaced too.
	over uint8
	// reserved: the record's own database is one of MongoDB's own
	// (naming.Reserved), which it was sent to the overflow target instead
	// of; "" otherwise.
	reserved string
}

// name is the store's name of collection coll of database db.
func (rt *router) name(db, coll string) string {
	if rt.t.Qualified {
		return db + "." + coll
	}
	return coll
}

// resolve is the destination of a record of tag (rec nil: the tag alone).
// A record whose database would be one of MongoDB's own (admin, local,
// config: see naming.Reserved) goes to the overflow target, or to the one
// whose tag is replaced too when the tag gave that database. The last
// resort, whose every placeholder reads Overflow, is never reserved
// (conf refuses such a target_overflow).
func (rt *router) resolve(tag string, rec bson.Raw) dest {
	db, coll, _ := rt.t.Target.Resolve(tag, rec)
	reserved := ""
	if naming.Reserved(db) {
		reserved = db
	} else if rt.set.Admit(db, coll) {
		return dest{coll: rt.name(db, coll)}
	}
	db, coll = rt.t.Target.Overflowed(tag, rt.t.Overflow)
	if !naming.Reserved(db) && rt.overflow.Admit(db, coll) {
		return dest{coll: rt.name(db, coll), over: 1, reserved: reserved}
	}
	db, coll = rt.t.Target.OverflowedAll(rt.t.Overflow)
	return dest{coll: rt.name(db, coll), over: 2, reserved: reserved}
}

// deadLetter is the dead-letter collection of a record of tag (rec nil:
// the tag alone) sent to d: in d's database, its record placeholders
// replaced as d's were.
func (rt *router) deadLetter(tag string, rec bson.Raw, d dest) string {
	t := naming.Pair{Database: rt.t.Target.Database, Collection: rt.t.DeadLetter}
	var db, coll string
	switch d.over {
	case 0:
		db, coll, _ = t.Resolve(tag, rec)
	case 1:
		db, coll = t.Overflowed(tag, rt.t.Overflow)
	default:
		db, coll = t.OverflowedAll(rt.t.Overflow)
	}
	return rt.name(db, coll)
}

// reservedReport gathers the records sent to an overflow target because
// their own database is reserved, between two warnings.
type reservedReport struct {
	n        int64
	dbs      []string // the reserved databases they named (at most three)
	where    []string // some of the overflow targets they went to (maxWhere)
	lastWarn time.Time
}

// reservedSent counts n records of r sent to an overflow target because
// their database is reserved and returns, at most once per
// overflowWarnEvery, how many were since it last did (0: nothing to say
// yet), the reserved databases they named and some of the targets they
// went to.
func (rt *router) reservedSent(n int, r *routes, now time.Time) (int64, []string, []string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rp := &rt.reserved
	rp.n += int64(n)
	for _, d := range r.table {
		if d.reserved == "" {
			continue
		}
		if len(rp.dbs) < 3 && !slices.Contains(rp.dbs, d.reserved) {
			rp.dbs = append(rp.dbs, d.reserved)
		}
		if len(rp.where) < maxWhere && !slices.Contains(rp.where, d.coll) {
			rp.where = append(rp.where, d.coll)
		}
	}
	if rp.n == 0 || now.Sub(rp.lastWarn) < overflowWarnEvery {
		return 0, nil, nil
	}
	n64, dbs, where := rp.n, rp.dbs, rp.where
	*rp = reservedReport{lastWarn: now}
	return n64, dbs, where
}

// routes are where a chunk's records go: table holds the distinct
// destinations, at the index in table of each record's (by position in
// the batch's Records; nil: every record goes to table[0]).
type routes struct {
	table []dest
	at    []int32
}

// of is the destination of record i.
func (r *routes) of(i int) dest {
	if r.at == nil {
		return r.table[0]
	}
	return r.table[r.at[i]]
}

// dests resolves the destination of each record of b and counts those
// sent to an overflow target, and among them those whose own database is
// reserved. A template of the tag alone is resolved
// once; records whose field values are equal share a destination, resolved
// once (see naming.Pair.AppendKey).
func (rt *router) dests(tag string, b *parser.Batch) (r *routes, over, reserved int) {
	r = &routes{}
	if len(b.Records) == 0 {
		return r, 0, 0
	}
	if rt.t.Target.Database.TagOnly() && rt.t.Target.Collection.TagOnly() {
		d := rt.resolve(tag, nil)
		r.table = []dest{d}
		if d.over > 0 {
			over = len(b.Records)
		}
		if d.reserved != "" {
			reserved = len(b.Records)
		}
		return r, over, reserved
	}
	r.at = make([]int32, len(b.Records))
	seen := map[string]int32{}
	var key []byte
	for i := range b.Records {
		rec := bson.Raw(b.Records[i].Doc)
		key = rt.t.Target.AppendKey(key[:0], rec)
		j, ok := seen[string(key)]
		if !ok {
			j = int32(len(r.table))
			r.table = append(r.table, rt.resolve(tag, rec))
			seen[string(key)] = j
		}
		if r.at[i] = j; r.table[j].over > 0 {
			over++
		}
		if r.table[j].reserved != "" {
			reserved++
		}
	}
	return r, over, reserved
}

// overflowed counts n records sent to overflow targets (some of them in
// r) and returns, at most once per overflowWarnEvery, how many were since
// it last did (0: nothing to say yet) and the names of some of the
// targets they went to.
func (rt *router) overflowed(n int, r *routes, now time.Time) (int64, []string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.over += int64(n)
	for _, d := range r.table {
		if d.over > 0 && d.reserved == "" && len(rt.where) < maxWhere && !slices.Contains(rt.where, d.coll) {
			rt.where = append(rt.where, d.coll)
		}
	}
	if rt.over == 0 || now.Sub(rt.lastWarn) < overflowWarnEvery {
		return 0, nil
	}
	n64, where := rt.over, rt.where
	rt.over, rt.where, rt.lastWarn = 0, nil, now
	return n64, where
}
