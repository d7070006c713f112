package sink

import (
	"math"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
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

// withID puts the id first in place of the document's own _id and keeps
// every other field, in order.
func TestWithID(t *testing.T) {
	doc, err := bson.Marshal(bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "tag", Value: "app"},
		{Key: "id", Value: "evt-1"}, {Key: "n", Value: int32(2)}})
	if err != nil {
		t.Fatal(err)
	}
	got := withID(bsoncore.Document(doc), valueOf(t, "evt-1"))
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	want, _ := bson.Marshal(bson.D{{Key: "_id", Value: "evt-1"}, {Key: "tag", Value: "app"},
		{Key: "id", Value: "evt-1"}, {Key: "n", Value: int32(2)}})
	if string(got) != string(want) {
		t.Errorf("got %v, want %v", bson.Raw(got), bson.Raw(want))
	}
}
