package mongolog

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/naming"
)

// Select narrows the targets a read covers: a glob of path.Match (k8s_*,
// logs_?, app[12]) or a plain name for the database and for the
// collection, "" for any. A collection is matched by its name without a
// partition's suffix.
type Select struct {
	Database, Collection string
}

// IsGlob reports whether s is written as a glob: it holds one of * ? [ \.
func IsGlob(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// Check refuses a glob path.Match cannot read, naming the flag (--database,
// --collection) it came from.
func (s Select) Check() error {
	for _, g := range []struct{ flag, glob string }{{"--database", s.Database}, {"--collection", s.Collection}} {
		if _, err := path.Match(g.glob, ""); err != nil {
			return fmt.Errorf("%s %q: not a glob path.Match reads (%v): use * for any run of characters, ? for one, [a-z] for one of a set, \\ to quote",
				g.flag, g.glob, err)
		}
	}
	return nil
}

func (s Select) empty() bool { return s.Database == "" && s.Collection == "" }

// Span is the targets one read of an output covers, a Reader each: for a
// static output without a glob, the one database and collection it names;
// for a templated output (or a glob), every database and collection the
// templates (or globs) match that exists, narrowed by a Select.
type Span struct {
	Cfg     *conf.Config // the output's configuration
	Readers []*Reader    // one per target, by database then collection
	// Named says that the read can cover several targets: records, problems
	// and lines name theirs (see Reader.Label, Place).
	Named bool

	from *Reader // the output's reader, and the selection, that found them
	sel  Select
}

// Place is one target: a database and a collection (the name its
// partitions carry before their suffix).
type Place struct{ Database, Collection string }

func (p Place) String() string { return p.Database + "." + p.Collection }

// Place is the target r reads.
func (r *Reader) Place() Place { return Place{Database: r.DB.Name(), Collection: r.Cfg.Collection} }

// Label is how lines name collection coll of r: the collection alone, or
// <database>.<collection> when r is one of several targets.
func (r *Reader) Label(coll string) string {
	if r.named {
		return r.DB.Name() + "." + coll
	}
	return coll
}

// systemDatabases are never a target found by listing.
var systemDatabases = []string{"admin", "local", "config"}

// Span finds the targets of r's output that sel narrows to. A static output
// without a Select is r itself, as it always was; otherwise the databases
// are found by listing them (a static database name without a glob is
// taken as it is) and kept when the database template (or the glob) matches
// them, and in each the collections likewise (see collectionTargets). A
// Select that no target meets is an error naming what is there.
func (r *Reader) Span(ctx context.Context, sel Select) (*Span, error) {
	if err := sel.Check(); err != nil {
		return nil, err
	}
	t := r.Cfg.Targets
	if !t.Templated() && sel.empty() {
		return &Span{Cfg: r.Cfg, Readers: []*Reader{r}}, nil
	}
	dbs, err := r.databases(ctx, sel.Database)
	if err != nil {
		return nil, err
	}
	s := &Span{Cfg: r.Cfg, Named: true, from: r, sel: sel}
	var all []string // every target before the collection's Select
	for _, db := range dbs {
		colls, found, err := r.collectionTargets(ctx, r.DB.Client().Database(db), sel.Collection)
		if err != nil {
			return nil, err
		}
		for _, c := range found {
			all = append(all, db+"."+c)
		}
		for _, c := range colls {
			s.Readers = append(s.Readers, r.at(db, c))
		}
	}
	if len(s.Readers) == 0 && !sel.empty() {
		if len(all) == 0 && sel.Database != "" {
			// No database met the glob: name the targets of every one.
			if all, err = r.targetNames(ctx); err != nil {
				return nil, err
			}
		}
		return nil, noTarget(r.Cfg, sel, dbs, all)
	}
	return s, nil
}

// targetNames are the <database>.<collection> names of every target of r's
// output.
func (r *Reader) targetNames(ctx context.Context) ([]string, error) {
	dbs, err := r.databases(ctx, "")
	if err != nil {
		return nil, err
	}
	var all []string
	for _, db := range dbs {
		_, found, err := r.collectionTargets(ctx, r.DB.Client().Database(db), "")
		if err != nil {
			return nil, err
		}
		for _, c := range found {
			all = append(all, db+"."+c)
		}
	}
	return all, nil
}

// noTarget is the error of a Select no target meets.
func noTarget(cfg *conf.Config, sel Select, dbs, all []string) error {
	var asked []string
	if sel.Database != "" {
		asked = append(asked, fmt.Sprintf("--database %q", sel.Database))
	}
	if sel.Collection != "" {
		asked = append(asked, fmt.Sprintf("--collection %q", sel.Collection))
	}
	there := "there is none"
	switch {
	case len(all) > 0:
		if len(all) > 20 {
			all = append(all[:20], fmt.Sprintf("and %d more", len(all)-20))
		}
		there = "there are " + strings.Join(all, ", ")
	case len(dbs) > 0:
		there = "the databases " + strings.Join(dbs, ", ") + " hold none"
	}
	return fmt.Errorf("no target of the output (database %s, collection %s) meets %s: %s", cfg.Database, cfg.Collection,
		strings.Join(asked, " and "), there)
}

// at is a Reader of one target of r's output: r's configuration with the
// target's names, as a static output of them.
func (r *Reader) at(db, coll string) *Reader {
	c := *r.Cfg
	c.Database, c.Collection = db, coll
	c.DeadLetterCollection = deadLetterOf(r.Cfg, coll)
	c.Targets = conf.Targets{}
	return &Reader{DB: r.DB.Client().Database(db), Cfg: &c, named: true}
}

// deadLetterOf is the dead-letter collection of the target collection coll
// of cfg's output when the names tell it: the output's own for its static
// collection, a static dead_letter_collection for every target of a
// collection template, or with the default (the collection's template
// and "_dead") coll and "_dead" unless coll was cut; else "".
func deadLetterOf(cfg *conf.Config, coll string) string {
	t := cfg.Targets
	switch {
	case coll == cfg.Collection:
		return cfg.DeadLetterCollection
	case t.Collection == nil || t.Collection.Static():
		return ""
	case t.DeadLetter.Static():
		return cfg.DeadLetterCollection
	case t.DeadLetter.Suffixed("") == t.Collection.Suffixed("_dead") && !cut(coll):
		return coll + "_dead"
	}
	return ""
}

// cut reports whether name ends as a name cut to fit does: '_' and
// naming.HashDigits hex digits.
func cut(name string) bool {
	i := len(name) - naming.HashDigits - 1
	return i > 0 && name[i] == '_' && strings.Trim(name[i+1:], "0123456789abcdef") == ""
}

// databases are the databases of the output that glob (a database's
// Select) meets.
func (r *Reader) databases(ctx context.Context, glob string) ([]string, error) {
	tpl := r.Cfg.Targets.Database
	if glob == "" && (tpl == nil || tpl.Static()) {
		return []string{r.Cfg.Database}, nil
	}
	names, err := r.DB.Client().ListDatabaseNames(ctx, bson.D{}, options.ListDatabases().SetNameOnly(true))
	if err != nil {
		return nil, fmt.Errorf("listing the databases: %w", err)
	}
	var out []string
	for _, n := range names {
		if slices.Contains(systemDatabases, n) && n != glob {
			continue
		}
		if tpl != nil && !tpl.Static() && !tpl.Matches(n) || !globMatch(glob, n) {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// globMatch reports whether glob ("": any) matches name; glob is checked
// (Select.Check).
func globMatch(glob, name string) bool {
	if glob == "" {
		return true
	}
	ok, _ := path.Match(glob, name)
	return ok
}

// collectionTargets lists the target collections of db that glob (a
// collection's Select) meets, and found, all targets before glob. A name is
// a target when, with a partitioned output, it is a partition and its name
// without the suffix is the collection (a partitioned output keeps records
// in partitions only); and when the collection template matches that name
// (a static collection: is it, or with a glob instead of a static name,
// any). A name the dead_letter_collection template can give is a
// dead-letter collection unless it holds records: see deadLetters.
func (r *Reader) collectionTargets(ctx context.Context, db *mongo.Database, glob string) (colls, found []string, err error) {
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the collections of %s: %w", db.Name(), err)
	}
	tpl := r.Cfg.Targets.Collection
	period := layout.None
	if r.Cfg.Partition != layout.None {
		period = r.Cfg.Partition
	}
	byBase := map[string][]string{} // target -> its collections
	for _, n := range names {
		base := n
		if period != layout.None {
			if base = partitionBase(n, period); base == "" {
				continue
			}
		}
		switch {
		case strings.HasPrefix(n, "system."):
			continue
		case tpl == nil || tpl.Static():
			if glob == "" && base != r.Cfg.Collection {
				continue
			}
		case !tpl.Matches(base):
			continue
		}
		byBase[base] = append(byBase[base], n)
	}
	// Without a template, a glob may meet any dead-letter collection.
	anyDead := glob != "" && (tpl == nil || tpl.Static()) && period == layout.None
	if err := r.dropDeadLetters(ctx, db, byBase, anyDead); err != nil {
		return nil, nil, err
	}
	for base := range byBase {
		found = append(found, base)
		if globMatch(glob, base) {
			colls = append(colls, base)
		}
	}
	slices.Sort(found)
	slices.Sort(colls)
	return colls, found, nil
}

// partitionBase is name without its partition suffix of period, or "" when
// name is no partition.
func partitionBase(name string, period layout.Period) string {
	n := len(period.Suffix()) // as long as the suffix it stands for
	if len(name) <= n || !layout.IsPartition(name, name[:len(name)-n], period) {
		return ""
	}
	return name[:len(name)-n]
}

// dropDeadLetters removes from byBase the targets whose collections the
// dead_letter_collection template (or name) can give (with anyDead, any
// collection) and whose first document is a dead letter or that hold
// none. A collection both templates can give (k8s_$ns and k8s_$ns_dead
// both give k8s_web_dead) is told apart so by what it holds: records are
// read, dead letters never.
func (r *Reader) dropDeadLetters(ctx context.Context, db *mongo.Database, byBase map[string][]string, anyDead bool) error {
	dl := r.Cfg.Targets.DeadLetter
	for base, colls := range byBase {
		for _, n := range colls {
			if !anyDead && (dl == nil && n != r.Cfg.DeadLetterCollection || dl != nil && !dl.Matches(n)) {
				continue
			}
			isDead, err := holdsDeadLetters(ctx, db.Collection(n))
			if err != nil {
				return err
			}
			if isDead {
				delete(byBase, base)
				break
			}
		}
	}
	return nil
}

// holdsDeadLetters reports whether the first document of c is a dead
// letter (it has parkedAt and reason), or c holds none.
func holdsDeadLetters(ctx context.Context, c *mongo.Collection) (bool, error) {
	d, err := c.FindOne(ctx, bson.D{}, options.FindOne().SetProjection(bson.D{{Key: model.ParkedAt, Value: 1}, {Key: model.Reason, Value: 1}})).Raw()
	switch {
	case err == mongo.ErrNoDocuments:
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading %s.%s: %w", c.Database().Name(), c.Name(), err)
	}
	_, parked := d.Lookup(model.ParkedAt).TimeOK()
	_, reason := d.Lookup(model.Reason).StringValueOK()
	return parked && reason, nil
}

// None is the error of what (e.g. "export") at a span without targets,
// which says how to name one; nil when s has some.
func (s *Span) None(what string) error {
	if len(s.Readers) > 0 {
		return nil
	}
	return fmt.Errorf("%s: the output (database %s, collection %s) has no target yet: name one with --database and --collection",
		what, s.Cfg.Database, s.Cfg.Collection)
}

// The fields a record printed from a Span that names its targets carries
// first: the database and collection it is stored in (the collection as
// the template gave it, without a partition's suffix).
const (
	PlaceDatabase   = "_db"
	PlaceCollection = "_collection"
)

// Placed is rec with PlaceDatabase and PlaceCollection of at before its
// own fields.
func Placed(rec bson.Raw, at Place) bson.Raw {
	idx, doc := bsoncore.AppendDocumentStart(nil)
	doc = bsoncore.AppendStringElement(doc, PlaceDatabase, at.Database)
	doc = bsoncore.AppendStringElement(doc, PlaceCollection, at.Collection)
	if len(rec) > 5 {
		doc = append(doc, rec[4:len(rec)-1]...) // rec's elements
	}
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return bson.Raw(doc)
}
