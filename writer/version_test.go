package writer_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sim/server"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// A replacement sent at an older version (an earlier attempt's write,
// held in the network) that lands after a newer one applies nothing: the
// document keeps the newer content, and the late write counts as stored
// already (superseded). A newer one replaces it.
func TestReplaceLateWriteAppliesNothing(t *testing.T) {
	ctx := context.Background()
	store := server.Direct{Server: server.New()}
	doc := func(msg string) []writer.Doc {
		id := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "ev-1")}
		raw := bsoncore.NewDocumentBuilder().AppendValue(model.ID, id).AppendString("msg", msg).
			AppendInt64(model.Version, 99).Build() // the record's own field of that name gives way
		return []writer.Doc{{ID: id, Raw: bson.Raw(raw)}}
	}
	stored := func() (string, int64) {
		docs := store.Docs("logs")
		if len(docs) != 1 {
			t.Fatalf("%d documents, want 1", len(docs))
		}
		msg, _ := docs[0].Lookup("msg").StringValueOK()
		v, _ := docs[0].Lookup(model.Version).Int64OK()
		return msg, v
	}
	write := func(msg string, version int64) writer.Inserted {
		ins, err := writer.ReplaceAll(ctx, store, "logs", doc(msg), writer.DefaultRetry, 0, 0, nil, version)
		if err != nil {
			t.Fatal(err)
		}
		return ins
	}
	if ins := write("v2", 20); ins.Existed != 0 {
		t.Errorf("the first write: existed %d, want 0", ins.Existed)
	}
	if ins := write("v1", 10); ins.Existed != 1 {
		t.Errorf("the late write: existed %d, want 1 (superseded)", ins.Existed)
	}
	if msg, v := stored(); msg != "v2" || v != 20 {
		t.Errorf("after the late write: %s at version %d, want v2 at 20", msg, v)
	}
	// A late write as the network delivers it, with no look before it:
	// DuplicateKey, and nothing changes.
	late := bson.Raw(bsoncore.NewDocumentBuilder().AppendString(model.ID, "ev-1").AppendString("msg", "v1").
		AppendInt64(model.Version, 15).Build())
	if err := store.Replace(ctx, "logs", []bson.Raw{late}); errkind.Of(err) != errkind.Duplicate {
		t.Errorf("a late replacement at version 15 over 20: %v, want DuplicateKey", err)
	}
	if msg, v := stored(); msg != "v2" || v != 20 {
		t.Errorf("after the late replacement: %s at version %d, want v2 at 20", msg, v)
	}
	write("v3", 30)
	if msg, v := stored(); msg != "v3" || v != 30 {
		t.Errorf("after a newer write: %s at version %d, want v3 at 30", msg, v)
	}
}
