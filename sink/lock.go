package sink

// chunkLock serialises the flushes of one content: a channel, not a mutex,
// because it is held across the flush's I/O (a goroutine waiting on a
// channel is one the simulator's virtual clock knows to be blocked).
type chunkLock struct {
	held  chan struct{}
	users int
}

// lockChunk waits until no other flush of content id runs and returns the
// unlock. Identical chunks flushed at once (by several workers, or a new
// one while an earlier one is retried) take their generations in turn.
func (s *Sink) lockChunk(id string) (unlock func()) {
	s.mu.Lock()
	l := s.flushing[id]
	if l == nil {
		l = &chunkLock{held: make(chan struct{}, 1)}
		s.flushing[id] = l
	}
	l.users++
	s.mu.Unlock()
	l.held <- struct{}{}
	return func() {
		<-l.held
		s.mu.Lock()
		if l.users--; l.users == 0 {
			delete(s.flushing, id)
		}
		s.mu.Unlock()
	}
}
