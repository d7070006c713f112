package sink

import (
	"slices"
)

// bounded maps chunk ids to values, keeping at most max of them: putting
// one more forgets the oldest, of those pinned reports false for if any.
type bounded[V any] struct {
	max    int
	by     map[string]V
	order  []string // oldest first
	pinned func(V) bool
}

func newBounded[V any](max int) *bounded[V] { return &bounded[V]{max: max, by: map[string]V{}} }

func (b *bounded[V]) get(id string) (V, bool) {
	v, ok := b.by[id]
	return v, ok
}

// put adds id, which must not be there.
func (b *bounded[V]) put(id string, v V) {
	if len(b.order) >= b.max {
		i := 0
		for b.pinned != nil && i < len(b.order)-1 && b.pinned(b.by[b.order[i]]) {
			i++
		}
		if b.pinned != nil && b.pinned(b.by[b.order[i]]) {
			i = 0 // all pinned: the oldest
		}
		delete(b.by, b.order[i])
		b.order = slices.Delete(b.order, i, i+1)
	}
	b.by[id] = v
	b.order = append(b.order, id)
}

func (b *bounded[V]) drop(id string) {
	if _, ok := b.by[id]; ok {
		delete(b.by, id)
		b.order = slices.DeleteFunc(b.order, func(o string) bool { return o == id })
	}
}
