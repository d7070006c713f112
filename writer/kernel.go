package writer

import "fmt"

// The rules both write protocols (bucket mode's groupProto, flat mode's
// flatProto) decide by. Each protocol keeps its own state; what an outcome
// means, when a lost connection makes content suspect, how a search
// halves and why a record is parked are decided here once.

// suspectAfter is how many network errors in a row a write of several
// records may meet, the server answering a ping after the last, before it
// is split in halves: some MongoDB-compatible servers drop the connection
// on values they do not support. Splitting costs nothing but commands.
const suspectAfter = 2

// lostMany counts a lost connection on a write of several records in
// netErrs and reports whether the server is to be pinged: after
// suspectAfter in a row, or from the first once a search is under way
// (searching). If the server answers, the content is suspect.
func lostMany(netErrs *int, searching bool) bool {
	*netErrs++
	return *netErrs >= suspectAfter || searching
}

// halve is the size of the first half of n records a suspect or refused
// write is split into.
func halve(n int) int { return (n + 1) / 2 }

// refusal is the reason a record is parked with when the server refuses
// it for reason.
func refusal(reason string) string { return "refused by MongoDB: " + reason }

// droppedAlone is the refusal of a record alone the server closed the
// connection on drops times in a row (see Dropped), err the last loss.
func droppedAlone(drops int, err error) error {
	return fmt.Errorf("the server closed the connection on this record alone %d times in a row, answering a command as large each time in between: %w", drops, err)
}

// afterDrop is what a record written alone does after a lost connection
// and the control command sent after it.
type afterDrop uint8

const (
	// dropWait: no evidence against the record; write it again after a
	// backoff.
	dropWait afterDrop = iota
	// dropRepeat: the server answers a command as large: write it again
	// at once.
	dropRepeat
	// dropPark: the evidence is complete: the record is refused (unless
	// it is stored already).
	dropPark
)

// afterControl counts the control's outcome p in drops (see countDrop)
// and decides what follows.
func afterControl(drops *int, p probe) afterDrop {
	switch {
	case countDrop(drops, p):
		return dropPark
	case p == probeAnswered:
		return dropRepeat
	}
	return dropWait
}
