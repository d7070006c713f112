// Package sim is the deterministic simulation of the plugin's whole write
// path: the real sink, writer, protocols, memos and identities of several
// agents' processes, run against a model of the server (package
// sim/server) through a network the simulator controls. A scheduler takes
// every command at the writer.Store boundary, one at a time, and decides
// its fate from the run's seed: answered, never sent, lost, applied with
// its reply lost, held in the network and applied later (after a retry, a
// restart, another agent's writes), a write conflict, a busy server, a
// reply that does not account for every statement, or answered after the
// flush's deadline. Time is virtual (testing/synctest): deadlines and
// backoffs pass in no time, and a run is replayed exactly by its seed.
//
// Each run draws its configuration and workload (agents with workers,
// chunks with Fluent Bit's contract, identical chunks, repeated lines,
// records the server refuses or chokes on, process kills), heals (faults
// off, every held command delivered, every chunk flushed until answered
// Done) and then asks the oracle (check) whether the promise held.
package sim
