// Package simdiff checks the simulator's model of MongoDB (sim/server)
// against a real MongoDB-wire server: its test replays operation sequences,
// generated in the shapes the plugin sends and recorded by simulation runs
// (testdata/*.ops), against both, one command at a time, and compares every
// reply and the final documents.
//
// The comparison is exact on MongoDB. Against FerretDB v1 (no MONGO_URI) it
// tolerates v1's stop of an unordered bulk write at its first failure, and
// against FerretDB v2 (recognised by buildInfo's ferretdb document) two
// defects of that server found by this test, each only as it shows (see
// flaws): an update whose $addToSet adds nothing new to an existing array
// while another of its operators changes the document stores the array
// field twice under one name ({level: [...], level: [...]}), doubling the
// copies at each such update; and a find whose result spans several
// batches returns documents that were updated since their insert more than
// once (with small batches, the same ten over and over), with no write
// during the find. MongoDB does neither.
package simdiff
