package mongolog

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func rawDoc(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A table's columns are every field of the records printed, in the order
// they first appear, not the first record's alone; nested values print as
// the JSON lines print them. Flushed after each record (query --follow),
// a record with new fields prints a header with them again.
func TestPrinterTableColumns(t *testing.T) {
	at := bson.NewDateTimeFromTime(time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC))
	recs := []bson.Raw{
		rawDoc(t, bson.D{{Key: "ts", Value: at}, {Key: "log", Value: "a"}}),
		rawDoc(t, bson.D{{Key: "ts", Value: at}, {Key: "level", Value: "info"}, {Key: "k", Value: bson.D{{Key: "n", Value: int32(42)}}}}),
		rawDoc(t, bson.D{{Key: "ts", Value: at}, {Key: "log", Value: "c"}, {Key: "stream", Value: "stderr"}}),
	}
	var out bytes.Buffer
	p := &Printer{W: &out, Format: "table", TimeKey: "ts"}
	for _, r := range recs {
		if err := p.Print(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{`^ts +log +level +k +stream$`, `^\S+Z +a$`, `^\S+Z +info +\{"n":42\}$`, `^\S+Z +c +stderr$`}
	if len(lines) != len(want) {
		t.Fatalf("table:\n%s", out.String())
	}
	for i, w := range want {
		if !regexp.MustCompile(w).MatchString(strings.TrimRight(lines[i], " ")) {
			t.Errorf("line %d %q, want %s", i, lines[i], w)
		}
	}
	out.Reset()
	p = &Printer{W: &out, Format: "table", TimeKey: "ts"}
	for _, r := range []bson.Raw{recs[0], recs[0], recs[2]} {
		if err := p.Print(r); err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if got := regexp.MustCompile(`(?m)^ts .*$`).FindAllString(out.String(), -1); len(got) != 2 || !strings.Contains(got[1], "stream") {
		t.Errorf("headers when flushed after each record: %q\n%s", got, out.String())
	}
}
