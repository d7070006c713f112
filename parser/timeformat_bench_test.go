package parser

import "testing"

// BenchmarkTimeFormatParse reads times with the formats Fluent Bit's own
// parsers use most; Parse must not allocate.
func BenchmarkTimeFormatParse(b *testing.B) {
	for _, c := range []struct{ name, format, value string }{
		{"apache", "%d/%b/%Y:%H:%M:%S %z", "10/Oct/2000:13:55:36 -0700"},
		{"iso", "%Y-%m-%dT%H:%M:%S.%L%z", "2024-06-01T10:00:00.123+0200"},
		{"syslog", "%a %b %e %T %Y", "Sat Jun  1 08:00:01 2024"},
		{"epoch", "%s.%L", "1717236000.25"},
	} {
		f, err := ParseTimeFormat(c.format)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := f.Parse(c.value); !ok {
			b.Fatalf("%s: %q does not parse", c.format, c.value)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				f.Parse(c.value)
			}
		})
	}
}
