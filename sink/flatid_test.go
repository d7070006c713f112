package sink

import (
	"math"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// valueOf is v as the decoder stores it.
func valueOf(t *testing.T, v any) bsoncore.Value {
	t.Helper()
	typ, data, err := bson.MarshalValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return bsoncore.Value{Type: bsoncore.Type(typ), Data: data}
}

// RecordID takes strings, ObjectIDs and integers (also as integral
// doubles) and says why it refuses anything else, naming the field and the
// value's type.
func TestRecordID(t *testing.T) {
	oid := bson.NewObjectID()
	for _, tt := range []struct {
		name string
		in   any
		want any // nil: refused
		why  string
	}{
		{"string", "evt-1", "evt-1", ""},
		{"objectid", oid, oid, ""},
		{"int32", int32(7), int32(7), ""},
		{"int64-small", int64(7), int32(7), ""},
		{"int64-large", int64(1) << 40, int64(1) << 40, ""},
		{"double-integral", 7.0, int32(7), ""},
		{"double-large", float64(1 << 40), int64(1) << 40, ""},
		{"double-2^53", float64(1 << 53), int64(1) << 53, ""},
		{"double-negative", -3.0, int32(-3), ""},
		{"empty-string", "", nil, `id_key "id" holds an empty string`},
		{"double-fraction", 1.5, nil, `id_key "id" holds the double 1.5, which is not an integer`},
		{"double-beyond-2^53", float64(1 << 54), nil, "not an integer of at most 2^53"},
		{"nan", math.NaN(), nil, "holds the double NaN"},
		{"inf", math.Inf(1), nil, "holds the double +Inf"},
		{"array", bson.A{"a"}, nil, `id_key "id" holds a value of type array: an _id from it must be a non-empty string, an integer or an ObjectId`},
		{"document", bson.D{{Key: "a", Value: 1}}, nil, "holds a value of type embedded document"},
		{"null", bson.Null{}, nil, "holds a value of type null"},
		{"bool", true, nil, "holds a value of type boolean"},
		{"regex", bson.Regex{Pattern: "a"}, nil, "holds a value of type regex"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, why := RecordID("id", valueOf(t, tt.in))
			if tt.want == nil {
				if why == "" || !strings.Contains(why, tt.why) {
					t.Errorf("why %q, want it to hold %q", why, tt.why)
				}
				return
			}
			if why != "" {
				t.Fatalf("refused: %s", why)
			}
			if want := valueOf(t, tt.want); !got.Equal(want) {
				t.Errorf("got %v (%v), want %v (%v)", got, got.Type, want, want.Type)
			}
		})
	}
}

// withID puts the id first, in place of the document's own _id (which the
// decoder writes after the time), and keeps every other field, in order.
func TestWithID(t *testing.T) {
	doc, err := bson.Marshal(bson.D{{Key: "ts", Value: bson.DateTime(1)}, {Key: "_id", Value: bson.NewObjectID()}, {Key: "tag", Value: "app"},
		{Key: "id", Value: "evt-1"}, {Key: "n", Value: int32(2)}})
	if err != nil {
		t.Fatal(err)
	}
	got := withID(bsoncore.Document(doc), valueOf(t, "evt-1"))
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	want, _ := bson.Marshal(bson.D{{Key: "_id", Value: "evt-1"}, {Key: "ts", Value: bson.DateTime(1)}, {Key: "tag", Value: "app"},
		{Key: "id", Value: "evt-1"}, {Key: "n", Value: int32(2)}})
	if string(got) != string(want) {
		t.Errorf("got %v, want %v", bson.Raw(got), bson.Raw(want))
	}
}

// A later generation's reid rewrites the plugin's ObjectIDs and leaves a
// record's own id alone, an ObjectID too; holds' probe of that generation
// leaves it out (see probe.go), as idOf tells.
func TestReidKeepsOwnIDs(t *testing.T) {
	s, err := New(Options{Mode: model.ModeFlat, Collection: "logs", DeadLetter: "logs_dead", TagKey: "tag", IDKey: "eid",
		MaxInflight: 1, Decoder: parser.Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_"}},
		nullStore{}, writer.DefaultRetry, quietLog{})
	if err != nil {
		t.Fatal(err)
	}
	own, plugin := bson.NewObjectID(), bson.NewObjectID()
	docOf := func(id bson.ObjectID, eid any) bsoncore.Document {
		d := bson.D{{Key: "_id", Value: id}, {Key: "tag", Value: "app"}}
		if eid != nil {
			d = append(d, bson.E{Key: "eid", Value: eid})
		}
		raw, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	b := &parser.Batch{Records: []parser.Record{{Index: 0, Doc: docOf(own, own)}, {Index: 1, Doc: docOf(plugin, nil)}}}
	s.reid(b, GenID("0123456789abcdef01234567", 1))
	if got := bson.Raw(b.Records[0].Doc).Lookup("_id").ObjectID(); got != own {
		t.Errorf("own ObjectID rewritten: %v, want %v", got, own)
	}
	if got := bson.Raw(b.Records[1].Doc).Lookup("_id").ObjectID(); got == plugin {
		t.Errorf("plugin ObjectID %v not rewritten for the later generation", got)
	}
	if _, ownID, _ := s.idOf(b.Records[0].Doc); !ownID {
		t.Error("idOf does not tell the record carries its own id")
	}
	if _, ownID, _ := s.idOf(b.Records[1].Doc); ownID {
		t.Error("idOf takes a record without the field for one with its own id")
	}
}
