package simdiff

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// flaws are the known defects of the server replayed against that the
// comparison tolerates, each exactly as it shows and only on the server
// that has it: on MongoDB (and any server not recognised) none is, and
// every reply and document must be the model's exactly.
type flaws struct {
	// dupFields: FerretDB v2 (v2.5.0 on DocumentDB 0.106) stores a
	// field twice when an update's $addToSet adds nothing new to an
	// existing array while another operator of the same update changes
	// the document: {values: {level: ["x"]}} updated by {$addToSet:
	// {"values.level": "x"}, $inc: {n: 1}} reads back as {values: {level:
	// ["x"], level: ["x"]}, n: 1}, and each such update doubles the copies
	// again. MongoDB leaves the array as it is ($addToSet of a value
	// present does nothing), and no MongoDB update makes a document with a
	// duplicate field name. The copies are equal (a later $addToSet that
	// adds a value adds it to each, a find by the field and a projection
	// of it read them all), so a server's document is compared with the
	// copies of a field that hold equal values kept once; copies that
	// differ still differ.
	dupFields bool
	// repeats: FerretDB v2 returns some documents of a find more than
	// once when its result spans batches (getMore) and documents of the
	// collection have been updated since they were inserted, with no
	// write during the find: 150 documents inserted, every seventh
	// updated by $inc, then read by a find of batch size 10 come as
	// d001..d010, d007..d016, d007..d016, ... for hundreds of thousands
	// of documents; with the default batches (101, then the rest) some
	// twenty of the first batch come again in the second. None is
	// missing. A MongoDB find returns a document twice only if a write
	// changes it during the find (cursor isolation), and two documents
	// of one collection never hold the same _id, so a server's document
	// that has an _id and is equal to one the same find returned before
	// it is dropped; a document missing, or a repeat that differs, still
	// fails.
	repeats bool
}

// flawsOf is the flaws of the server writer.ServerOf names name.
func flawsOf(name string) flaws {
	if strings.HasPrefix(name, "FerretDB v2.") {
		return flaws{dupFields: true, repeats: true}
	}
	return flaws{}
}

// The tolerances apply only to the server that has the defect, and only
// as far as the defect goes.
func TestFlaws(t *testing.T) {
	for name, want := range map[string]flaws{
		"MongoDB 7.0.14":                            {},
		"FerretDB v1 (claiming MongoDB 7.0.42)":     {},
		"FerretDB v2.5.0 (claiming MongoDB 7.0.77)": {dupFields: true, repeats: true},
	} {
		if got := flawsOf(name); got != want {
			t.Errorf("flawsOf(%q) = %+v, want %+v", name, got, want)
		}
	}

	raw := func(d bson.D) bson.Raw {
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	x := bson.A{"x"}
	twice := raw(bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: bson.D{{Key: "l", Value: x}, {Key: "l", Value: x}}}})
	once := raw(bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: bson.D{{Key: "l", Value: x}}}})
	differ := raw(bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: bson.D{{Key: "l", Value: x}, {Key: "l", Value: bson.A{"y"}}}}})
	if norm(twice, false) == norm(once, false) {
		t.Error("a duplicate field is ignored without dupFields")
	}
	if norm(twice, true) != norm(once, true) {
		t.Errorf("equal copies of a field not kept once: %s", norm(twice, true))
	}
	if norm(differ, true) == norm(once, true) {
		t.Error("copies of a field that differ are dropped")
	}

	noID := raw(bson.D{{Key: "n", Value: 1}})
	docs := []bson.Raw{once, noID, once, noID}
	for _, c := range []struct {
		f    flaws
		want int
	}{{flaws{}, 4}, {flaws{repeats: true}, 3}} {
		r := &replay{flaws: c.f}
		if got := r.serverNorms(docs); len(got) != c.want {
			t.Errorf("with %+v: %d documents kept, want %d: %v", c.f, len(got), c.want, got)
		}
	}
}
