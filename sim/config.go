package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
)

// Config is one run's settings and workload, drawn from its seed.
type Config struct {
	Mode                 model.Mode
	Agents, Workers      int
	Chunks               int // per agent, on average
	MaxChunkRecords      int
	MaxMessage           int     // bytes of a record's message, at most
	Modules              int     // distinct values of the "mod" field (svc.mod with that bucket key)
	Identical            float64 // chance a chunk repeats an earlier one's bytes
	Repeats              float64 // chance a record repeats the one before it
	Poison, Choke        float64 // chances a record is refused, or choked on
	Hold                 float64 // chance every write of a record is held
	Limits               sink.Limits
	Spacing              time.Duration
	MaxRecords, MaxBytes int // per bucket
	Window               time.Duration
	BucketKey            []string
	// IDKey: flat documents take the record's "eid" field as their _id
	// (id_key eid, id_action replace); Events is how many ids there are.
	IDKey  bool
	Events int
	// Keep: with a number of days, records go to daily partitions of
	// the collection, partition_keep days are kept, and days pass in the
	// run (at most Days) with the agents' retention dropping the
	// partitions that fall out of the kept range (see drawParts).
	Keep, Days int
	// HoldParks: the chance the network holds a dead letter's insert
	// (applied later, after the attempt, a retry or a restart): aimed at
	// records parked while their fate is still on its way.
	HoldParks    float64
	WriteBatch   int
	FlushTimeout time.Duration
	Restarts     int // process kills, at most
	Faults       Faults
	Steps        int // the scheduler's budget before healing
}

// Faults are the chances of each fault, per command the scheduler takes.
type Faults struct {
	Unsent    float64 // never sent: no server selected
	Lost      float64 // lost before it reached the server
	Unheard   float64 // applied, its reply lost
	Held      float64 // held in the network, applied later (or never)
	Conflict  float64 // a write conflict (update commands)
	Busy      float64 // the server answers "not now" (an election)
	Partial   float64 // a reply that does not account for every statement
	Abandoned float64 // a command its caller gave up on is applied later
	Late      float64 // per step: a held command is applied now
	Slow      float64 // per step: time passes while commands wait
}

// draw makes the configuration of seed's run.
func draw(rng *rand.Rand) Config {
	pick := func(vs ...int) int { return vs[rng.IntN(len(vs))] }
	c := Config{
		Mode:            model.ModeBucket,
		Agents:          1 + rng.IntN(3),
		Workers:         1 + rng.IntN(3),
		Chunks:          2 + rng.IntN(5),
		MaxChunkRecords: pick(1, 3, 8, 20),
		MaxMessage:      pick(10, 200, 1500),
		Modules:         1 + rng.IntN(3),
		Identical:       []float64{0, 0.2, 0.5}[rng.IntN(3)],
		Repeats:         []float64{0, 0.1, 0.3}[rng.IntN(3)],
		Spacing:         time.Duration(pick(1, 10, 90)) * time.Second,
		MaxRecords:      pick(2, 3, 5, 10, 1000),
		MaxBytes:        pick(2048, 4096, 1<<20),
		Window:          time.Duration(pick(0, 1, 60)) * time.Minute,
		WriteBatch:      pick(1, 2, 3, 100),
		FlushTimeout:    time.Duration(pick(1, 3, 10)) * time.Second,
		Restarts:        pick(0, 0, 1, 2),
		Steps:           pick(200, 600, 1500),
	}
	if rng.IntN(10) < 3 {
		c.Mode = model.ModeFlat
	}
	switch rng.IntN(4) {
	case 0:
		c.BucketKey = []string{"mod"}
	case 1:
		// A dotted path: the key is stored nested (key.svc.mod), and
		// every statement's filter names it so.
		c.BucketKey = []string{"svc.mod"}
	}
	if rng.IntN(4) == 0 {
		c.Poison = 0.05
	}
	if rng.IntN(5) == 0 {
		c.Choke = 0.05
	}
	if rng.IntN(2) == 0 {
		// Records whose every write the network holds: parked after
		// their writes are fenced, their dead letters on the way.
		c.Hold = []float64{0.05, 0.15}[rng.IntN(2)]
	}
	if rng.IntN(4) == 0 {
		// Small memories: forgetting is reached.
		c.Limits = sink.Limits{Contents: 1 + rng.IntN(6), Unfinished: 1 + rng.IntN(3), Groups: 1 + rng.IntN(4)}
	}
	level := []float64{0, 0.02, 0.08, 0.2}[rng.IntN(4)]
	f := func() float64 { return level * rng.Float64() }
	c.Faults = Faults{Unsent: f(), Lost: f(), Unheard: f(), Held: f(), Conflict: f(), Busy: f(), Partial: f(),
		Abandoned: rng.Float64(), Late: f(), Slow: f()}
	return c
}

// drawIDs draws, from a stream of its own (the seeds of runs without ids
// replay as before), whether a flat run's records carry their own ids.
func drawIDs(ids *rand.Rand, c *Config) {
	if c.Mode == model.ModeFlat && ids.IntN(2) == 0 {
		// No identical chunks: the oracle tells versions by record, and
		// a record parked in one chunk and stored from its twin would be
		// one record.
		c.IDKey, c.Events, c.Identical = true, 1+ids.IntN(4), 0
	}
}

// drawParts draws, from a stream of its own, whether a run writes to
// daily partitions with partition_keep (not with own ids: an id is one
// document per partition).
func drawParts(parts *rand.Rand, c *Config) {
	if parts.IntN(3) == 0 && !c.IDKey {
		c.Keep, c.Days = 1+parts.IntN(2), 1+parts.IntN(3)
	}
}

// drawAims draws, from a stream of its own, the faults aimed at one
// class of interleavings.
func drawAims(aims *rand.Rand, c *Config) {
	if aims.IntN(4) == 0 {
		c.HoldParks = []float64{0.3, 0.7}[aims.IntN(2)]
		// Restarts: a new process knows nothing of the parks whose dead
		// letters are on their way.
		c.Restarts = max(c.Restarts, 1+aims.IntN(3))
	}
}

func (c Config) String() string {
	return fmt.Sprintf("mode %s, %d agents x %d workers, %d chunks each of up to %d records (identical %.2f, repeats %.2f, poison %.2f, choke %.2f, hold %.2f), limits %+v, bucket %d records %d bytes window %s key %v, id_key %v (%d events), partition_keep %d (%d days pass), dead letters held %.1f, write_batch %d, flush_timeout %s, restarts %d, steps %d, faults %+v",
		c.Mode, c.Agents, c.Workers, c.Chunks, c.MaxChunkRecords, c.Identical, c.Repeats, c.Poison, c.Choke, c.Hold, c.Limits,
		c.MaxRecords, c.MaxBytes, c.Window, c.BucketKey, c.IDKey, c.Events, c.Keep, c.Days, c.HoldParks, c.WriteBatch, c.FlushTimeout, c.Restarts, c.Steps, c.Faults)
}
