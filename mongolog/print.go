package mongolog

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// Printer writes records as JSON lines (relaxed extended JSON), as a table,
// or raw (the unparsed line under RawKey, else the JSON line, said once on
// Note). A table's columns are the time and then every field of the
// records printed until Flush, in the order they first appear; a table
// flushed again adds the columns new records bring, with a header again.
type Printer struct {
	W       io.Writer
	Format  string // "json", "table" or "raw"
	TimeKey string
	RawKey  string    // the field holding the raw line (parse_key); empty: log
	Note    io.Writer // where raw says that a record holds no raw line; nil: nowhere
	rows    []bson.Raw
	cols    []string // the columns of the header printed last
	noted   bool
}

// Formats are the output formats a Printer knows.
var Formats = []string{"json", "table", "raw"}

func (p *Printer) Print(rec bson.Raw) error {
	switch p.Format {
	case "table":
		return p.row(rec)
	case "raw":
		key := p.RawKey
		if key == "" {
			key = "log"
		}
		if line, ok := rec.Lookup(key).StringValueOK(); ok {
			_, err := fmt.Fprintln(p.W, line)
			return err
		}
		if !p.noted && p.Note != nil {
			p.noted = true
			fmt.Fprintf(p.Note, "mongolog: --format raw: records without the raw line (no text field %s: a parser drops the line it parses) are printed as JSON lines\n", key)
		}
	}
	b, err := bson.MarshalExtJSON(rec, false, false)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(p.W, "%s\n", b)
	return err
}

func (p *Printer) row(rec bson.Raw) error {
	p.rows = append(p.rows, slices.Clone(rec))
	return nil
}

// table prints the rows held, under a header of their columns when it
// differs from the last one printed.
func (p *Printer) table() error {
	cols := slices.Clone(p.cols)
	if len(cols) == 0 {
		cols = []string{p.TimeKey}
	}
	have := map[string]bool{}
	for _, c := range cols {
		have[c] = true
	}
	for _, rec := range p.rows {
		elems, _ := rec.Elements()
		for _, e := range elems {
			if k := e.Key(); !have[k] {
				have[k] = true
				cols = append(cols, k)
			}
		}
	}
	tw := tabwriter.NewWriter(p.W, 0, 4, 2, ' ', 0)
	if !slices.Equal(cols, p.cols) {
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
		p.cols = cols
	}
	cells := make([]string, len(cols))
	for _, rec := range p.rows {
		for i, c := range cols {
			cells[i] = cell(rec.Lookup(c))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	p.rows = p.rows[:0]
	return tw.Flush()
}

// cell is a value as a table shows it.
func cell(v bson.RawValue) string {
	switch v.Type {
	case 0:
		return ""
	case bson.TypeDateTime:
		return v.Time().UTC().Format(time.RFC3339Nano)
	}
	s, ok := parser.ScalarText(bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
	if !ok {
		s = relaxedJSON(v)
	}
	return strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
}

// relaxedJSON is v as a JSON line prints it (relaxed extended JSON).
func relaxedJSON(v bson.RawValue) string {
	doc := bsoncore.NewDocumentBuilder().AppendValue("v", bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}).Build()
	b, err := bson.MarshalExtJSON(bson.Raw(doc), false, false)
	if err != nil {
		return v.String()
	}
	s := strings.TrimPrefix(string(b), `{"v":`)
	return strings.TrimSuffix(s, "}")
}

// Flush writes out the table's rows held.
func (p *Printer) Flush() error {
	if p.Format == "table" && len(p.rows) > 0 {
		return p.table()
	}
	return nil
}
