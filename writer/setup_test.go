package writer

import (
	"testing"
	"time"
)

// The kept range is counted back from the period of now: whole days or
// months, across month and year ends, whatever the time of day.
func TestPartitionsOldest(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		layout string
		keep   int
		now    string
		want   string // name of the oldest kept partition
	}{
		{"20060102", 1, "2024-06-01T23:59:59Z", "logs_20240601"},
		{"20060102", 3, "2024-06-01T00:00:00Z", "logs_20240530"},
		{"20060102", 3, "2024-01-02T05:00:00+09:00", "logs_20231230"}, // 2024-01-01T20:00Z
		{MonthLayout, 1, "2024-06-30T12:00:00Z", "logs_202406"},
		{MonthLayout, 3, "2024-02-29T12:00:00Z", "logs_202312"},
		{MonthLayout, 14, "2024-02-01T00:00:00Z", "logs_202301"},
	}
	for _, c := range cases {
		p := Partitions{Base: "logs", Layout: c.layout, Keep: c.keep}
		if got := p.Name(p.Oldest(at(c.now))); got != c.want {
			t.Errorf("%s keep %d at %s: oldest kept %s, want %s", c.layout, c.keep, c.now, got, c.want)
		}
	}
	if !(Partitions{Base: "logs", Layout: "20060102"}).Oldest(time.Now()).IsZero() {
		t.Errorf("keep 0 keeps every period: want a zero oldest")
	}
}
