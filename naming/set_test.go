package naming

import (
	"strconv"
	"sync"
	"testing"
)

func TestSet(t *testing.T) {
	s := NewSet(2)
	steps := []struct {
		db, coll string
		want     bool
		refused  uint64
	}{
		{"a", "x", true, 0},
		{"a", "x", true, 0}, // already admitted
		{"a", "y", true, 0},
		{"b", "x", false, 1}, // a third pair
		{"a", "y", true, 1},
		{"ax", "", false, 2}, // the pair is (db, coll), not their concatenation
		{"a", "x", true, 2},
	}
	for i, st := range steps {
		if got := s.Admit(st.db, st.coll); got != st.want || s.Refused() != st.refused {
			t.Errorf("step %d: Admit(%q, %q) = %v, refused %d; want %v, %d", i, st.db, st.coll, got, s.Refused(), st.want, st.refused)
		}
	}
	if s.Len() != 2 {
		t.Errorf("Len = %d", s.Len())
	}
}

func TestSetZero(t *testing.T) {
	for _, n := range []int{0, -1} {
		s := NewSet(n)
		if s.Admit("a", "b") || s.Refused() != 1 || s.Len() != 0 {
			t.Errorf("NewSet(%d) admitted a pair", n)
		}
	}
}

// TestSetConcurrent: goroutines offering many distinct pairs at once admit
// exactly the limit, refuse every other new offer and keep the admitted
// ones admitted; the set never holds more than its limit.
func TestSetConcurrent(t *testing.T) {
	const limit, workers, pairs = 50, 8, 1000
	s := NewSet(limit)
	admitted := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range pairs {
				coll := strconv.Itoa(i)
				if s.Admit("db", coll) {
					admitted[w] = append(admitted[w], coll)
				}
			}
		})
	}
	wg.Wait()
	distinct := map[string]bool{}
	total := 0
	for _, a := range admitted {
		total += len(a)
		for _, c := range a {
			distinct[c] = true
		}
	}
	if len(distinct) != limit || s.Len() != limit {
		t.Fatalf("%d distinct pairs admitted, Len %d; want %d", len(distinct), s.Len(), limit)
	}
	if got, want := s.Refused(), uint64(workers*pairs-total); got != want {
		t.Errorf("Refused = %d, want %d", got, want)
	}
	for c := range distinct {
		if !s.Admit("db", c) {
			t.Errorf("admitted pair %q refused later", c)
		}
	}
}

// Pairs opened as existing are admitted whatever the limit and count
// towards it: beyond it, only they and those admitted before are.
func TestSetOpen(t *testing.T) {
	s := NewSet(2)
	if !s.Admit("a", "x") {
		t.Fatal("a first pair refused")
	}
	s.Open([][2]string{{"a", "y"}, {"a", "z"}, {"a", "x"}})
	for _, p := range [][2]string{{"a", "x"}, {"a", "y"}, {"a", "z"}} {
		if !s.Admit(p[0], p[1]) {
			t.Errorf("%v refused", p)
		}
	}
	if s.Admit("b", "x") || s.Len() != 3 {
		t.Errorf("a new pair admitted beyond the limit, or Len %d, want 3", s.Len())
	}
}
