package sink

import "sync"

// chunkLock serialises the flushes of one content.
type chunkLock struct {
	mu    sync.Mutex
	users int
}

// lockChunk waits until no other flush of content id runs and returns the
// unlock. Identical chunks flushed at once (by several workers, or a new
// one while an earlier one is retried) take their generations in turn.
func (s *Sink) lockChunk(id string) (unlock func()) {
	s.mu.Lock()
	l := s.flushing[id]
	if l == nil {
		l = &chunkLock{}
		s.flushing[id] = l
	}
	l.users++
	s.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.mu.Lock()
		if l.users--; l.users == 0 {
			delete(s.flushing, id)
		}
		s.mu.Unlock()
	}
}
