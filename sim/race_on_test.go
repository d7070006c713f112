//go:build race

package sim

// raceOn: the race detector runs the simulation about ten times slower;
// make test runs the whole short budget once more without it.
const raceOn = true
