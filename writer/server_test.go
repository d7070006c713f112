package writer

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestServerOf(t *testing.T) {
	raw := func(d bson.D) bson.Raw {
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		info  bson.D
		name  string
		batch int
	}{
		{bson.D{{Key: "version", Value: "7.0.14"}}, "MongoDB 7.0.14", 0},
		{bson.D{{Key: "version", Value: "7.0.42"}, {Key: "ferretdbVersion", Value: "v1.24.2"}}, "FerretDB v1 (claiming MongoDB 7.0.42)", 20},
		{bson.D{{Key: "version", Value: "7.0.77"}, {Key: "ferretdb", Value: bson.D{{Key: "version", Value: "v2.5.0"}}}}, "FerretDB v2.5.0 (claiming MongoDB 7.0.77)", 0},
	} {
		s := ServerOf(raw(c.info))
		if s.Name != c.name || s.MaxWriteBatch != c.batch || (c.batch > 0) != (s.Why != "") {
			t.Errorf("%v: %+v, want %q with batch %d", c.info, s, c.name, c.batch)
		}
	}
}
