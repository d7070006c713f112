package naming

import (
	"sync"
	"sync/atomic"
)

// Set is a bounded set of the distinct (database, collection) pairs records
// have been routed to. It is safe for concurrent use, and admits new pairs
// only while it holds fewer than its limit, however many distinct values
// arrive: it holds at most the limit, or the pairs opened as existing
// (Open) when they are more.
type Set struct {
	limit   int
	mu      sync.RWMutex
	pairs   map[pair]struct{}
	refused atomic.Uint64
}

// pair is one resolved target.
type pair struct{ db, coll string }

// NewSet is an empty Set admitting up to limit pairs; a limit under 1
// admits none.
func NewSet(limit int) *Set {
	return &Set{limit: max(limit, 0), pairs: make(map[pair]struct{}, min(max(limit, 0), 64))}
}

// Admit reports whether records may go to (db, coll): true for a pair
// already admitted, and for a new pair while fewer than the limit are,
// which admits it; false for a new pair beyond the limit (the caller then
// writes to the overflow target), which counts as a refusal.
func (s *Set) Admit(db, coll string) bool {
	p := pair{db, coll}
	s.mu.RLock()
	_, ok := s.pairs[p]
	s.mu.RUnlock()
	if ok {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pairs[p]; ok {
		return true
	}
	if len(s.pairs) >= s.limit {
		s.refused.Add(1)
		return false
	}
	s.pairs[p] = struct{}{}
	return true
}

// Open adds the pairs of targets that exist already: they are admitted
// whatever the limit, and count towards it.
func (s *Set) Open(pairs [][2]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pairs {
		s.pairs[pair{p[0], p[1]}] = struct{}{}
	}
}

// Refused is how many times Admit has returned false.
func (s *Set) Refused() uint64 { return s.refused.Load() }

// Len is how many pairs are admitted.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.pairs)
}
