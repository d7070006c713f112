// Package simdiff checks the simulator's model of MongoDB (sim/server)
// against a real MongoDB-wire server: its test replays operation sequences,
// generated in the shapes the plugin sends and recorded by simulation runs
// (testdata/*.ops), against both, one command at a time, and compares every
// reply and the final documents.
package simdiff
