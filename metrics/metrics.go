// Package metrics serves the plugin's Prometheus metrics. All instances of
// the plugin in one process share one set of metrics, told apart by the
// output label (the instance's name), and the instances that listen on the
// same address share one endpoint.
package metrics

import (
	"errors"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/version"
)

var (
	registry = prometheus.NewRegistry()

	records = counter("out_mongodb_records_total",
		"Records received, each counted once however many attempts its chunk takes.")
	stored = counter("out_mongodb_records_stored_total",
		"Records stored in MongoDB.")
	already = counter("out_mongodb_records_already_stored_total",
		"Records a flush found stored by an earlier process, or by an earlier attempt whose reply was lost, and not counted as stored.")
	parked = counter("out_mongodb_records_parked_total",
		"Records parked in the dead-letter collection with their reason.")
	overflowed = counter("out_mongodb_records_overflowed_total",
		"Records sent to an overflow target: their own target would have been a new one beyond target_limit.")
	chunks = counter("out_mongodb_chunks_total",
		"Flushes by result: ok (every record stored or parked), retry (given back to Fluent Bit), error (given up; the plugin never does).", "result")
	retries = counter("out_mongodb_retries_total",
		"Flushes given back to Fluent Bit, by reason: timeout, network, server, setup, panic, other.", "reason")
	created = counter("out_mongodb_buckets_created_total",
		"Bucket documents created.")
	commands = counter("out_mongodb_write_commands_total",
		"Write commands sent (bucket updates of up to write_batch statements, inserts).")
	flushSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "out_mongodb_flush_seconds",
		Help:    "Time to flush one chunk, whatever its result.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14), // 5 ms to 41 s
	}, []string{"output"})
	inflight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "out_mongodb_inflight_writes",
		Help: "Write commands in flight (at most max_inflight per output).",
	}, []string{"output"})
	buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "out_mongodb_build_info",
		Help: "Always 1: the plugin's version and the Go release it was built with, as labels.",
	}, []string{"version", "goversion"})
)

func init() {
	registry.MustRegister(flushSeconds, inflight, buildInfo)
	buildInfo.WithLabelValues(version.Version, runtime.Version()).Set(1)
}

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{"output"}, labels...))
	registry.MustRegister(c)
	return c
}

// Output is the metrics of one output.
type Output struct {
	name string
	// writes counts write commands as they start; inflight those running.
	writes   prometheus.Counter
	inflight prometheus.Gauge
}

// For returns the metrics of the output named name, each series present
// from the start (at 0).
func For(name string) *Output {
	for _, r := range []string{"ok", "retry", "error"} {
		chunks.WithLabelValues(name, r)
	}
	for _, c := range []*prometheus.CounterVec{records, stored, already, parked, overflowed, created, commands} {
		c.WithLabelValues(name)
	}
	flushSeconds.WithLabelValues(name)
	return &Output{name: name, writes: commands.WithLabelValues(name), inflight: inflight.WithLabelValues(name)}
}

// OnWrite counts a write command starting (+1) or ending (-1); see
// sink.Options.OnWrite.
func (o *Output) OnWrite(delta int) {
	if delta > 0 {
		o.writes.Inc()
	}
	o.inflight.Add(float64(delta))
}

// Flushed records one flush and how long it took.
func (o *Output) Flushed(res sink.Result, took time.Duration) {
	if res.New {
		records.WithLabelValues(o.name).Add(float64(res.Records))
		overflowed.WithLabelValues(o.name).Add(float64(res.Overflowed))
	}
	stored.WithLabelValues(o.name).Add(float64(res.Stored))
	already.WithLabelValues(o.name).Add(float64(res.Found))
	parked.WithLabelValues(o.name).Add(float64(res.Parked))
	created.WithLabelValues(o.name).Add(float64(res.Created))
	flushSeconds.WithLabelValues(o.name).Observe(took.Seconds())
	if res.Status == sink.Done {
		chunks.WithLabelValues(o.name, "ok").Inc()
		return
	}
	chunks.WithLabelValues(o.name, "retry").Inc()
	retries.WithLabelValues(o.name, Reason(res.Err)).Inc()
}

// Reason sorts the error that made a flush give its chunk back, by its
// errkind kind: timeout, network, setup (a set-up that must succeed
// before writing failed), panic, server (any other answer of the server),
// other.
func Reason(err error) string {
	var setup *layout.Required
	switch k := errkind.Of(err); {
	case k == errkind.Timeout || k == errkind.Lost && errkind.TimedOut(err):
		return "timeout"
	case k == errkind.Lost || k == errkind.Unreachable:
		return "network"
	case errors.As(err, &setup):
		return "setup"
	case k == errkind.Panic:
		return "panic"
	case k.FromServer():
		return "server"
	}
	return "other"
}

// Endpoint is a /metrics listener shared by the outputs that name its
// address.
type Endpoint struct {
	addr   string
	srv    *http.Server
	users  int
	closed chan struct{}
}

var endpoints = struct {
	sync.Mutex
	by map[string]*Endpoint
}{by: map[string]*Endpoint{}}

// Listen serves /metrics on addr, or joins the endpoint already serving
// it. Close releases it.
func Listen(addr string) (*Endpoint, error) {
	endpoints.Lock()
	defer endpoints.Unlock()
	if e := endpoints.by[addr]; e != nil {
		e.users++
		return e, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	e := &Endpoint{addr: addr, users: 1, closed: make(chan struct{}),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(e.closed)
		_ = e.srv.Serve(ln)
	}()
	endpoints.by[addr] = e
	return e, nil
}

// Addr is the address the endpoint listens on, as configured.
func (e *Endpoint) Addr() string { return e.addr }

// Close releases the endpoint; the last user stops it.
func (e *Endpoint) Close() {
	endpoints.Lock()
	defer endpoints.Unlock()
	if e.users--; e.users > 0 {
		return
	}
	delete(endpoints.by, e.addr)
	_ = e.srv.Close()
	<-e.closed
}
