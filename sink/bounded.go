package sink

import (
	"slices"
)

// bounded maps chunk ids to values, keeping at most max of them: putting
// one more forgets the oldest.
type bounded[V any] struct {
	max   int
	by    map[string]V
	order []string // oldest first
}

func newBounded[V any](max int) *bounded[V] { return &bounded[V]{max: max, by: map[string]V{}} }

func (b *bounded[V]) get(id string) (V, bool) {
	v, ok := b.by[id]
	return v, ok
}

// put adds id, which must not be there.
func (b *bounded[V]) put(id string, v V) {
	if len(b.order) >= b.max {
		delete(b.by, b.order[0])
		b.order = b.order[1:]
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
