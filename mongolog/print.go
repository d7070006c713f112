package mongolog

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// Printer writes records as JSON lines (relaxed extended JSON), as a table
// (columns from the first record), or raw (the unparsed line under
// RawKey, else the JSON line, said once on Note).
type Printer struct {
	W       io.Writer
	Format  string // "json", "table" or "raw"
	TimeKey string
	RawKey  string    // the field holding the raw line (parse_key); empty: log
	Note    io.Writer // where raw says that a record holds no raw line; nil: nowhere
	tw      *tabwriter.Writer
	cols    []string
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
	if p.tw == nil {
		p.tw = tabwriter.NewWriter(p.W, 0, 4, 2, ' ', 0)
		p.cols = []string{p.TimeKey}
		elems, _ := rec.Elements()
		for _, e := range elems {
			if e.Key() != p.TimeKey {
				p.cols = append(p.cols, e.Key())
			}
		}
		fmt.Fprintln(p.tw, strings.Join(p.cols, "\t"))
	}
	cells := make([]string, len(p.cols))
	for i, c := range p.cols {
		cells[i] = cell(rec.Lookup(c))
	}
	_, err := fmt.Fprintln(p.tw, strings.Join(cells, "\t"))
	return err
}

// cell is a value as a table shows it.
func cell(v bson.RawValue) string {
	switch v.Type {
	case 0:
		return ""
	case bson.TypeDateTime:
		return v.Time().UTC().Format(time.RFC3339Nano)
	}
	if s, ok := parser.ScalarText(bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}); ok {
		return strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
	}
	return v.String()
}

// Flush writes out a table.
func (p *Printer) Flush() error {
	if p.tw != nil {
		return p.tw.Flush()
	}
	return nil
}
