//go:build race

package sink

// raceEnabled: the race detector slows the memory test's 1000 flushes to
// minutes; make unit runs that test once more without it.
const raceEnabled = true
