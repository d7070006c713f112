package e2e

// The counters: every record of an acknowledged chunk counts once, as
// stored, already stored or parked, however many attempts and processes
// its chunk took.

import (
	"testing"

	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
)

// A flat chunk whose insert applied with its reply lost is given back;
// its resend finds every document stored: already stored, not stored
// twice and not missing from the counts.
func TestCountsFlatLostReply(t *testing.T) {
	e := newDBEnv(t)
	chunk, _ := appSlice(t, 500)
	opt := modeSinkOptions("flat")
	fs := &faultStore{Store: e.store(), failAt: 1, err: errTimeout, apply: true, down: true}
	s := e.newSink(opt, fs, fs.retry())
	flushSink(t, s, "app.log", chunk, sink.Retry)
	fs.heal()
	flushSink(t, s, "app.log", chunk, sink.Done)
	if tot := s.Totals(); tot.Records != 500 || tot.Stored != 0 || tot.Found != 500 || tot.Parked != 0 {
		t.Errorf("totals %+v, want 500 records, all already stored", tot)
	}
	if n := len(e.all("logs")); n != 500 {
		t.Errorf("%d documents, want 500", n)
	}
}

// After a restart, a resend that finds its chunk stored whole says so in
// the summary line and the metrics: 0 stored, all already stored.
func TestCountsResendAfterRestart(t *testing.T) {
	for _, mode := range []string{"bucket", "flat"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			addr := freeAddr(t)
			pm := e.props("mode", mode, "instance_name", "app", "metrics_listen", addr)
			file := fixture("chunk-app-json-5000.msgpack")
			e.init("a", pm)
			e.mustFlush("a", "app.log", file)
			e.resendInNewProcess("a", pm, "app.log", file)
			got := scrape(t, addr)
			for name, want := range map[string]float64{
				"out_mongodb_records_total":                5000,
				"out_mongodb_records_stored_total":         0,
				"out_mongodb_records_already_stored_total": 5000,
				"out_mongodb_records_parked_total":         0,
			} {
				if v, ok := got[name]["output=app"]; !ok || v != want {
					t.Errorf("%s{output=app} = %v (present %v), want %v", name, v, ok, want)
				}
			}
			e.exit("a")
			if line := "[out_mongodb:app] stopped: 1 chunk, 5000 records, 0 stored, 5000 already stored, 0 parked, 0 retries"; !waitLog(e.host, line) {
				t.Errorf("no line %q:\n%s", line, e.host.Stderr())
			}
		})
	}
}

// Records received equal stored plus already stored plus parked once a
// chunk with a record of a time out of range, interrupted after its second
// write applied with the reply lost, is resent in the same process, and
// again after a restart.
func TestCountsAddUp(t *testing.T) {
	for _, mode := range []string{"bucket", "flat"} {
		t.Run(mode, func(t *testing.T) {
			e := newDBEnv(t)
			chunk, _ := appSlice(t, 300)
			bad := recordAt(t, int64(1)<<40, kv{"msg", "a time in ms sent as seconds"})
			chunk = join([][]byte{chunk, bad})
			opt := modeSinkOptions(mode)
			fs := &faultStore{Store: e.store(), failAt: 2, err: errTimeout, apply: true, down: true}
			s := e.newSink(opt, fs, fs.retry())
			flushSink(t, s, "app.log", chunk, sink.Retry)
			fs.heal()
			flushSink(t, s, "app.log", chunk, sink.Done)
			check := func(s *sink.Sink, when string) {
				tot := s.Totals()
				if tot.Records != 301 || tot.Stored+tot.Found+tot.Parked != tot.Records || tot.Parked != 1 {
					t.Errorf("%s: totals %+v: stored, already stored and parked should add up to 301 records, 1 parked", when, tot)
				}
			}
			check(s, "resent in the same process")
			s = e.newSink(opt, e.store(), fastRetry)
			res := flushSink(t, s, "app.log", chunk, sink.Done)
			check(s, "resent after a restart")
			if res.Stored != 0 || res.Found != 300 {
				t.Errorf("after a restart: %d stored, %d already stored, want 0 and 300", res.Stored, res.Found)
			}
		})
	}
}
