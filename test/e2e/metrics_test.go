package e2e

// metrics_listen: two outputs of one process share one /metrics endpoint,
// told apart by the output label.

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// scrape reads the metrics served at addr: metric name -> the series'
// label values joined by "," -> value.
func scrape(t *testing.T, addr string) map[string]map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for name, f := range families {
		out[name] = map[string]float64{}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out[name][strings.Join(labels, ",")] = value(f.GetType(), m)
		}
	}
	return out
}

func value(kind dto.MetricType, m *dto.Metric) float64 {
	switch kind {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}

// Two outputs: "app" stores a chunk of 5000 records and one of 3 records
// where one does not fit in a bucket (parked); "down" points at a closed
// port and gives its chunk of 2 records back twice. A scrape returns each
// output's counts: records once however many attempts, stored, parked,
// chunks by result, retries by reason, and the flushes observed; the
// summary line at exit counts the same.
func TestMetricsTwoOutputs(t *testing.T) {
	e := newEnv(t)
	addr := freeAddr(t)
	e.init("app", e.props("instance_name", "app", "metrics_listen", addr, "bucket_max_bytes", "64K"))
	e.init("down", map[string]string{"uri": "mongodb://127.0.0.1:1/", "instance_name": "down",
		"metrics_listen": addr, "flush_timeout": "1s", "connect_timeout": "1s"})

	e.mustFlush("app", "app.log", fixture("chunk-app-json-5000.msgpack"))
	at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	small := chunkFile(t, dir, "small", idRecord(t, at, "a", 10), idRecord(t, at, "big", 100<<10), idRecord(t, at, "b", 10))
	e.mustFlush("app", "app.log", small)
	two := chunkFile(t, dir, "two", idRecord(t, at, "c", 10), idRecord(t, at, "d", 10))
	for i := 0; i < 2; i++ {
		if rc := e.flush("down", "app.log", two); rc != harness.FLBRetry {
			t.Fatalf("flush to a closed port: rc %d, want FLB_RETRY", rc)
		}
	}

	got := scrape(t, addr)
	want := []struct {
		name, labels string
		value        float64
	}{
		{"out_mongodb_records_total", "output=app", 5003},
		{"out_mongodb_records_stored_total", "output=app", 5002},
		{"out_mongodb_records_parked_total", "output=app", 1},
		{"out_mongodb_chunks_total", "output=app,result=ok", 2},
		{"out_mongodb_chunks_total", "output=app,result=retry", 0},
		{"out_mongodb_chunks_total", "output=app,result=error", 0},
		{"out_mongodb_flush_seconds", "output=app", 2},
		{"out_mongodb_inflight_writes", "output=app", 0},
		{"out_mongodb_records_total", "output=down", 2},
		{"out_mongodb_records_stored_total", "output=down", 0},
		{"out_mongodb_chunks_total", "output=down,result=ok", 0},
		{"out_mongodb_chunks_total", "output=down,result=retry", 2},
		{"out_mongodb_retries_total", "output=down,reason=timeout", 2},
		{"out_mongodb_flush_seconds", "output=down", 2},
	}
	for _, w := range want {
		v, ok := got[w.name][w.labels]
		if !ok || v != w.value {
			t.Errorf("%s{%s} = %v (present %v), want %v", w.name, w.labels, v, ok, w.value)
		}
	}
	for _, name := range []string{"out_mongodb_buckets_created_total", "out_mongodb_write_commands_total"} {
		if v := got[name]["output=app"]; v < 1 {
			t.Errorf("%s{output=app} = %v, want at least 1", name, v)
		}
	}
	// One build_info series for the process, 1, naming the version the
	// plugin's start-up line names.
	if bi := got["out_mongodb_build_info"]; len(bi) != 1 {
		t.Errorf("out_mongodb_build_info: %v, want one series", bi)
	} else {
		for labels, v := range bi {
			m := regexp.MustCompile(`; out_mongodb (\S+) \((go[^,]+),`).FindStringSubmatch(e.host.Stderr())
			if m == nil || v != 1 || labels != "goversion="+m[2]+",version="+m[1] {
				t.Errorf("out_mongodb_build_info{%s} = %v; the start-up line says %q", labels, v, m)
			}
		}
	}
	for name, series := range got {
		for labels := range series {
			if strings.Contains(labels, "instance=") || strings.Contains(labels, "127.0.0.1:1") {
				t.Errorf("%s{%s}: a label names an instance or an address", name, labels)
			}
		}
	}
	if t.Failed() {
		t.Logf("scraped: %v\n%s", got, e.host.Stderr())
	}
	// The summary line counts the retried chunk and its records once too.
	e.exit("down")
	if line := "[out_mongodb:down] stopped: 1 chunk, 2 records, 0 stored, 0 already stored, 0 parked, 2 retries"; !waitLog(e.host, line) {
		t.Errorf("no line %q:\n%s", line, e.host.Stderr())
	}
}

// A metrics address already in use is a start-up error naming the key.
func TestMetricsAddressInUse(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rc, err := e.host.Init("a", e.props("metrics_listen", ln.Addr().String()))
	if err != nil || rc != harness.FLBError {
		t.Fatalf("init: rc %d err %v, want FLB_ERROR", rc, err)
	}
	want := fmt.Sprintf("metrics_listen: invalid value %q: cannot serve metrics there", ln.Addr().String())
	if !waitLog(e.host, want) || !strings.Contains(e.host.Stderr(), "address already in use") {
		t.Errorf("stderr lacks %q and the cause:\n%s", want, e.host.Stderr())
	}
}
